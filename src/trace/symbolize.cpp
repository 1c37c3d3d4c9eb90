// magpie/trace/dump.hpp: symbolize() — a code address to a function name, from the ELF symbol
// table of the module that contains it (local symbols included: coroutine resume functions are
// local), so that neither -rdynamic nor debug information is needed.

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "magpie/trace/dump.hpp"

namespace magpie::trace {

namespace {

struct symbol {
  std::uintptr_t start; // relative to the module's load bias
  std::uintptr_t size;
  std::string name;
};

/// A module's function symbols, sorted by address (empty if its file has no symbol table).
struct module_symbols {
  std::vector<symbol> symbols;
};

template <typename T>
T const *at(std::byte const *file, std::size_t size, std::uint64_t off) {
  return off + sizeof(T) <= size ? reinterpret_cast<T const *>(file + off) : nullptr;
}

/// Reads the function symbols of the ELF file `path` (.symtab, else .dynsym).
module_symbols read_symbols(char const *path) {
  module_symbols out;
  int const fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return out;
  }
  struct stat st {};
  void *map = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (map == MAP_FAILED) {
    return out;
  }
  auto const *file = static_cast<std::byte const *>(map);
  auto const size = static_cast<std::size_t>(st.st_size);
  auto const *eh = at<Elf64_Ehdr>(file, size, 0);
  if (eh != nullptr && std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
      eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(Elf64_Shdr)) {
    auto section = [&](std::size_t i) {
      return at<Elf64_Shdr>(file, size, eh->e_shoff + i * sizeof(Elf64_Shdr));
    };
    for (unsigned wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
      for (std::size_t i = 0; i < eh->e_shnum && out.symbols.empty(); ++i) {
        Elf64_Shdr const *sh = section(i);
        if (sh == nullptr || sh->sh_type != wanted || sh->sh_entsize != sizeof(Elf64_Sym)) {
          continue;
        }
        Elf64_Shdr const *strings = section(sh->sh_link);
        if (strings == nullptr || strings->sh_offset + strings->sh_size > size) {
          continue;
        }
        auto const *names = reinterpret_cast<char const *>(file + strings->sh_offset);
        for (std::size_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); ++k) {
          auto const *sym = at<Elf64_Sym>(file, size, sh->sh_offset + k * sizeof(Elf64_Sym));
          if (sym == nullptr || ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_value == 0 ||
              sym->st_name >= strings->sh_size) {
            continue;
          }
          char const *name = names + sym->st_name;
          out.symbols.push_back(
              {sym->st_value, sym->st_size,
               std::string(name, ::strnlen(name, strings->sh_size - sym->st_name))});
        }
      }
      if (!out.symbols.empty()) {
        break;
      }
    }
  }
  ::munmap(map, size);
  std::sort(out.symbols.begin(), out.symbols.end(),
            [](symbol const &a, symbol const &b) { return a.start < b.start; });
  return out;
}

/// The module containing `code`: its file and load bias (from the loader's list).
struct module_of {
  std::uintptr_t address = 0;
  std::string path;
  std::uintptr_t bias = 0;
  bool found = false;
};

int find_module(dl_phdr_info *info, std::size_t, void *data) {
  auto *m = static_cast<module_of *>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    ElfW(Phdr) const &ph = info->dlpi_phdr[i];
    std::uintptr_t const lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && m->address >= lo && m->address < lo + ph.p_memsz) {
      m->found = true;
      m->bias = info->dlpi_addr;
      m->path = info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' ? info->dlpi_name
                                                                         : "/proc/self/exe";
      return 1;
    }
  }
  return 0;
}

std::string demangle(std::string const &mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && text ? std::string(text.get()) : mangled;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

/// The name of the coroutine whose resume (or destroy) function is `raw`, else `raw` demangled.
/// GCC 12 names it `<f>PZ<coroutine>E<n><coroutine>.Frame.actor` (the coroutine's own mangled
/// name is embedded, its length before it); Clang names it `<coroutine>.resume`.
std::string coroutine_name(std::string raw) {
  // GCC's clone suffixes (.cold, .part.N, .constprop.N, .isra.N), innermost last.
  for (bool again = true; again;) {
    again = false;
    std::size_t end = raw.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(raw[end - 1])) != 0) {
      --end;
    }
    if (end != raw.size() && end > 0 && raw[end - 1] == '.') {
      --end; // a clone's number
    } else {
      end = raw.size();
    }
    for (std::string_view clone : {".cold", ".part", ".constprop", ".isra"}) {
      if (ends_with(std::string_view(raw).substr(0, end), clone)) {
        raw.resize(end - clone.size());
        again = true;
        break;
      }
    }
  }
  for (std::string_view suffix : {".Frame.actor", ".Frame.destroy"}) {
    if (!ends_with(raw, suffix)) {
      continue;
    }
    std::size_t const id_end = raw.size() - suffix.size() + 6; // keeps ".Frame"
    for (std::size_t i = 1; i + 2 < id_end; ++i) {
      if (raw.compare(i, 2, "_Z") != 0 ||
          std::isdigit(static_cast<unsigned char>(raw[i - 1])) == 0) {
        continue;
      }
      std::size_t digits = i;
      while (digits > 0 && std::isdigit(static_cast<unsigned char>(raw[digits - 1])) != 0) {
        --digits;
      }
      if (std::strtoul(raw.c_str() + digits, nullptr, 10) == id_end - i) {
        return demangle(raw.substr(i, id_end - 6 - i));
      }
    }
  }
  for (std::string_view suffix : {".resume", ".destroy", ".cleanup"}) {
    if (ends_with(raw, suffix)) {
      return demangle(raw.substr(0, raw.size() - suffix.size()));
    }
  }
  return demangle(raw);
}

std::mutex cache_mutex;
std::map<std::string, module_symbols> cache; // by path; guarded by cache_mutex

} // namespace

std::string symbolize(void const *code) {
  module_of m;
  m.address = reinterpret_cast<std::uintptr_t>(code);
  dl_iterate_phdr(&find_module, &m);
  char buffer[64];
  if (!m.found) {
    std::snprintf(buffer, sizeof buffer, "%p", code);
    return buffer;
  }
  std::uintptr_t const offset = m.address - m.bias;
  {
    std::lock_guard lock(cache_mutex);
    auto it = cache.find(m.path);
    if (it == cache.end()) {
      it = cache.emplace(m.path, read_symbols(m.path.c_str())).first;
    }
    auto const &symbols = it->second.symbols;
    auto after = std::upper_bound(symbols.begin(), symbols.end(), offset,
                                  [](std::uintptr_t a, symbol const &s) { return a < s.start; });
    if (after != symbols.begin()) {
      symbol const &s = *std::prev(after);
      if (offset < s.start + std::max<std::uintptr_t>(s.size, 1)) {
        return coroutine_name(s.name);
      }
    }
  }
  Dl_info info{};
  if (dladdr(code, &info) != 0 && info.dli_sname != nullptr) {
    return coroutine_name(info.dli_sname);
  }
  std::snprintf(buffer, sizeof buffer, "+0x%zx", static_cast<std::size_t>(offset));
  return m.path + buffer;
}

} // namespace magpie::trace
