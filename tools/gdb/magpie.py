# magpie's gdb extension: async backtraces of the tasks a magpie program runs, from a live
# process or a core file, without debug information (only the symbol table).
#
#   (gdb) source tools/gdb/magpie.py
#   (gdb) magpie tasks        every pool: each worker's chain of tasks, then the parked tasks
#   (gdb) magpie bt N [P]     worker N's chain (of the P-th pool listed by `magpie tasks`; 0)
#
# It reads the same structures as magpie::trace::dump (magpie/trace/dump.hpp): the registry of
# live pools `magpie_debug` (magpie/sched/registry.hpp), each worker's segmented stack, where the
# running task is the topmost task frame, and each frame's link to its parent. Parked tasks are
# listed while the program has a magpie::trace::track_parked alive.

import re

import gdb

LAYOUT_VERSION = 2
MAX_CHAIN = 4096


class _Memory:
    def __init__(self):
        self.inferior = gdb.selected_inferior()  # 64-bit little-endian layouts only

    def read(self, address, size):
        return bytes(self.inferior.read_memory(address, size))

    def u64(self, address):
        return int.from_bytes(self.read(address, 8), "little")

    def u32(self, address):
        return int.from_bytes(self.read(address, 4), "little")

    def u8(self, address):
        return self.read(address, 1)[0]


class _Layout:
    """magpie_debug_info (see magpie/sched/registry.hpp)."""

    FIELDS = ("version", "promise_offset", "frame_handle", "frame_parent", "frame_ctx",
              "frame_kind", "frame_size", "kind_root", "stacklet_header", "stacklet_prev",
              "stacklet_saved_sp", "stack_alignment")

    def __init__(self, mem):
        try:
            self.address = int(gdb.parse_and_eval("(unsigned long)&magpie_debug"))
        except gdb.error:
            raise gdb.GdbError("magpie: no symbol magpie_debug: is this a magpie program "
                               "(linked with libmagpie, symbols not stripped)?")
        for i, name in enumerate(self.FIELDS):
            setattr(self, name, mem.u32(self.address + 4 * i))
        if self.version != LAYOUT_VERSION:
            raise gdb.GdbError("magpie: registry layout %d, this script knows %d"
                               % (self.version, LAYOUT_VERSION))
        base = self.address + 4 * len(self.FIELDS)
        self.pools = mem.u64(base)
        self.parked = mem.u64(base + 8)
        self.parked_count = mem.u64(base + 16)
        self.tracking = mem.u32(base + 24)
        self.anchor_caller = mem.u32(base + 28)


def _clean(name):
    """A coroutine's resume function's name, as the function the user wrote."""
    name = re.sub(r" \+ \d+$", "", name.strip())
    gcc = re.search(r"::(_Z[\w.]*?)\.Frame\*\)", name)  # GCC: f(f(args)::_Z<f>.Frame*) [clone .actor]
    if gcc:
        try:
            text = gdb.execute("demangle -l c++ -- " + gcc.group(1), to_string=True).strip()
            if text:
                return text
        except gdb.error:
            pass
    return re.sub(r" \[clone [^\]]*\]", "", name)  # Clang: f(int) [clone .resume]


def _symbol(address):
    try:
        text = gdb.execute("info symbol 0x%x" % address, to_string=True)
    except gdb.error:
        return "0x%x" % address
    if text.startswith("No symbol"):
        return "0x%x" % address
    return _clean(text.split(" in section ")[0])


class _Reader:
    def __init__(self):
        self.mem = _Memory()
        self.layout = _Layout(self.mem)

    def pools(self):
        """[(pool address, executor address, [(context, top, sp)])], most recent first."""
        out = []
        entry = self.layout.pools
        while entry != 0 and len(out) < 1024:
            pool = self.mem.u64(entry + 8)
            workers = self.mem.u64(entry + 16)
            array = self.mem.u64(entry + 24)
            callers = self.mem.u64(entry + 40)  # guest slots after the workers
            views = []
            for i in range(workers + callers):
                w = array + 24 * i
                views.append((self.mem.u64(w), self.mem.u64(w + 8), self.mem.u64(w + 16)))
            out.append((pool, self.mem.u64(entry + 32), views, workers))
            entry = self.mem.u64(entry)
        return out

    def frame_at(self, p, ctx):
        L, m = self.layout, self.mem
        f = p + L.promise_offset
        if m.u64(p) == 0 or m.u64(f + L.frame_handle) != p:
            return None
        if m.u8(f + L.frame_kind) > 2 or m.u64(f + L.frame_ctx) != ctx:
            return None
        return f

    def running(self, view):
        """The frame_base of the task a worker runs (the topmost frame on its stack), or None."""
        ctx, top_at, sp_at = view
        L, m = self.layout, self.mem
        top, sp = m.u64(top_at), m.u64(sp_at)
        need = L.promise_offset + L.frame_size
        seg = top
        while seg != 0:
            lo = seg + L.stacklet_header
            hi = sp if seg == top else m.u64(seg + L.stacklet_saved_sp)
            if hi < lo:
                return None
            k = (hi - lo - need) // L.stack_alignment if hi - lo >= need else -1
            while k >= 0:
                f = self.frame_at(lo + k * L.stack_alignment, ctx)
                if f is not None:
                    return f
                k -= 1
            seg = m.u64(seg + L.stacklet_prev)
        return None

    def chain(self, f):
        """[(frame, resume fn, is root)] from f up to its root."""
        L, m = self.layout, self.mem
        out = []
        while f and len(out) < MAX_CHAIN:
            frame = m.u64(f + L.frame_handle)
            kind = m.u8(f + L.frame_kind)
            out.append((frame, m.u64(frame) if frame else 0, kind == L.kind_root))
            if kind == L.kind_root or kind > 2:
                break
            f = m.u64(f + L.frame_parent)
            if f and m.u64(f + L.frame_parent) == 0:
                # with_stop's anchor (core/scope.hpp): its handle is the awaiting task's, which
                # m_caller names; the chain goes on from there.
                f = m.u64(f + L.anchor_caller)
        return out

    def parked(self, home=None):
        L, m = self.layout, self.mem
        out = []
        for i in range(L.parked_count if L.tracking else 0):
            frame, owner = m.u64(L.parked + 16 * i), m.u64(L.parked + 16 * i + 8)
            if home is None or owner == home:
                out.append(frame)
        return out


def _print_chain(chain, indent="  "):
    for i, (frame, resume, root) in enumerate(chain):
        name = _symbol(resume) if resume else "(finished)"
        gdb.write("%s#%d %s  [frame 0x%x]%s\n" % (indent, i, name, frame, " (root)" if root else ""))


class _Magpie(gdb.Command):
    """magpie's tasks: `magpie tasks`, `magpie bt N [POOL]`."""

    def __init__(self):
        super().__init__("magpie", gdb.COMMAND_STACK, prefix=True)


class _Tasks(gdb.Command):
    """List every magpie pool's workers with the chain of tasks each runs, then parked tasks."""

    def __init__(self):
        super().__init__("magpie tasks", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        r = _Reader()
        pools = r.pools()
        if not pools:
            gdb.write("magpie: no live pool\n")
        for index, (pool, executor, views, workers) in enumerate(pools):
            gdb.write("pool %d at 0x%x: %d worker(s)\n" % (index, pool, workers))
            for w, view in enumerate(views):
                chain = r.chain(r.running(view) or 0)
                if w >= workers:  # a caller that runs its own root: shown only while it does
                    if chain:
                        gdb.write("caller %d:\n" % (w - workers))
                        _print_chain(chain)
                    continue
                gdb.write("worker %d:%s\n" % (w, "" if chain else " no task"))
                _print_chain(chain)
            if r.layout.tracking:
                parked = r.parked(executor)
                gdb.write("parked tasks: %d\n" % len(parked))
                for i, f in enumerate(parked):
                    gdb.write("parked %d:\n" % i)
                    _print_chain(r.chain(f))
            else:
                gdb.write("parked tasks: not tracked (no magpie::trace::track_parked alive)\n")


class _Backtrace(gdb.Command):
    """magpie bt N [POOL]: the chain of tasks worker N runs, innermost first."""

    def __init__(self):
        super().__init__("magpie bt", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        args = gdb.string_to_argv(argument)
        if not args:
            raise gdb.GdbError("usage: magpie bt WORKER [POOL]")
        worker, pool = int(args[0]), int(args[1]) if len(args) > 1 else 0
        r = _Reader()
        pools = r.pools()
        if pool >= len(pools) or worker >= pools[pool][3]:
            raise gdb.GdbError("magpie: no worker %d in pool %d" % (worker, pool))
        chain = r.chain(r.running(pools[pool][2][worker]) or 0)
        if not chain:
            gdb.write("worker %d runs no task\n" % worker)
        _print_chain(chain, "")


_Magpie()
_Tasks()
_Backtrace()
