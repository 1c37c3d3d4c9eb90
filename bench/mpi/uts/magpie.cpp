// Distributed UTS — MPI + magpie. The same batches, shares and termination as the OpenMP and
// oneTBB versions (mpi/uts/rank_state.hpp); what differs is who talks to MPI and when:
//   - a server task, spawned on the rank's pool, awaits the next control message
//     (magpie::mpi::irecv from any rank) and answers it — a thief's request with a share of the
//     pool, a token by passing it on when the rank is passive — while the explorer's batch runs
//     on the other workers: a thief waits for the victim's MPI progress, not for its batch to end
//     (a one-worker pool runs one strand at a time: there the explorer steps aside after a batch
//     in which the poller completed a request — resubmitted the server — with a 20 µs sleep, whose
//     wake-up queues it behind the server);
//   - the explorer task runs the batches (fork per node, as in bench/uts), calls
//     magpie::mpi::progress() between two (a thief's request that came during the batch resumes
//     the server at once, as the peers' loops see it between batches, rather than at the poller's
//     next scan: its pauses grow to a millisecond while the rank computes), and, when the pool is
//     empty, sends a steal request and awaits the reply: its worker runs other tasks meanwhile.
// MPI_THREAD_MULTIPLE (magpie::mpi::environment): tasks start operations on any worker, and
// magpie's poller tests them.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"
#include "mpi/uts/driver.hpp"

namespace {

namespace mpi = magpie::mpi;

struct context {
  uts::tree const *tree;
  mpi_uts::rank_state *state;
  magpie::sched::pool *pool;
  std::atomic<bool> *serving; // set by the server as it starts listening
};

magpie::task<uts::result> visit(context const *c, uts::node const *n, int levels) {
  std::vector<uts::slot> kids;
  int const next = mpi_uts::expand(*c->tree, *n, levels, *c->state, kids);
  if (next > 0) {
    std::size_t const k = kids.size();
    for (std::size_t i = 0; i + 1 < k; ++i) {
      co_await magpie::fork(&kids[i].r, visit, c, &kids[i].n, next);
    }
    co_await magpie::call(&kids[k - 1].r, visit, c, &kids[k - 1].n, next);
    co_await magpie::join();
  }
  co_return mpi_uts::finish(*n, kids);
}

/// Does what a termination step says (a token to pass on, or DONE to every rank).
magpie::task<void> perform(context const *c, mpi_uts::step st) {
  if (st.what == mpi_uts::step::send) {
    co_await mpi::isend(st.msg, st.to, mpi_uts::tag_control, MPI_COMM_WORLD);
  } else if (st.what == mpi_uts::step::finish) {
    mpi_uts::control const done{mpi_uts::control::done, 0, 0, 0, 0};
    for (int r = 1; r < c->state->ranks(); ++r) {
      co_await mpi::isend(done, r, mpi_uts::tag_control, MPI_COMM_WORLD);
    }
    c->state->set_done();
  }
}

/// Answers control messages until the explorer sends this rank QUIT.
magpie::task<void> serve(context const *c) {
  std::vector<uts::node> share;
  // The rest of this strand posts the first receive, on this worker, before it runs anything else.
  c->serving->store(true, std::memory_order_release);
  for (;;) {
    auto const m =
        co_await mpi::irecv<mpi_uts::control>(MPI_ANY_SOURCE, mpi_uts::tag_control, MPI_COMM_WORLD);
    if (m.kind == mpi_uts::control::request) {
      c->state->take_share(share);
      co_await mpi::isend(std::span<uts::node const>(share), m.from, mpi_uts::tag_reply,
                          MPI_COMM_WORLD);
    } else if (m.kind == mpi_uts::control::token) {
      co_await magpie::call(perform, c, c->state->on_token(m));
      co_await magpie::join();
    } else if (m.kind == mpi_uts::control::done) {
      c->state->set_done();
    } else {
      co_return;
    }
  }
}

/// Runs batches until DONE; returns this rank's count.
magpie::task<uts::result> explore(context const *c) {
  mpi_uts::rank_state &s = *c->state;
  int const levels = s.parameters().batch_levels;
  uts::result total;
  std::vector<uts::node> batch;
  std::vector<uts::result> rs;
  std::vector<uts::node> reply(s.parameters().max_share);
  std::uint64_t completions = mpi::poller_statistics().completions;
  for (;;) {
    if (s.take_batch(batch)) {
      rs.assign(batch.size(), {});
      for (std::size_t i = 0; i + 1 < batch.size(); ++i) {
        co_await magpie::fork(&rs[i], visit, c, &batch[i], levels);
      }
      co_await magpie::call(&rs.back(), visit, c, &batch.back(), levels);
      co_await magpie::join();
      total.add(mpi_uts::sum(rs));
      s.end_batch();
      // Between batches, as the peers' rank loop: a request that arrived meanwhile resumes the
      // server now, not at the poller's next scan (up to a millisecond after a quiet spell).
      mpi::progress();
      if (c->pool->size() == 1) {
        // One worker runs one strand at a time: if the poller has resubmitted the server (the
        // only task that waits while the explorer runs), step aside behind it.
        std::uint64_t const seen = mpi::poller_statistics().completions;
        if (seen != completions) {
          completions = seen;
          co_await magpie::sleep_for(std::chrono::microseconds(20));
        }
      }
      continue;
    }
    co_await magpie::call(perform, c, s.advance_token());
    co_await magpie::join();
    if (s.done()) {
      break;
    }
    int const victim = s.victim();
    co_await mpi::isend(mpi_uts::control{mpi_uts::control::request, s.rank(), 0, 0, 0}, victim,
                        mpi_uts::tag_control, MPI_COMM_WORLD);
    MPI_Status const st = co_await mpi::irecv(std::span<uts::node>(reply), victim,
                                              mpi_uts::tag_reply, MPI_COMM_WORLD);
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    s.receive(std::span(reply).first(static_cast<std::size_t>(bytes) / sizeof(uts::node)));
  }
  // Every rank has its last reply once all are in the barrier; the servers answer until then.
  MPI_Request barrier;
  mpi_uts::check(MPI_Ibarrier(MPI_COMM_WORLD, &barrier), "MPI_Ibarrier");
  co_await mpi::wait(barrier);
  co_await mpi::isend(mpi_uts::control{mpi_uts::control::quit, s.rank(), 0, 0, 0}, s.rank(),
                      mpi_uts::tag_control, MPI_COMM_WORLD);
  co_return total;
}

} // namespace

int main(int argc, char **argv) {
  mpi::environment env(argc, argv); // MPI_THREAD_MULTIPLE; finalised after the pool is gone
  auto const o = mpi_uts::parse(argc, argv);
  uts::tree const &t = uts::find(o.size);
  int status = 0;
  {
    magpie::pool_options po;
    po.workers = o.workers;
    po.callers_run_roots = false; // W workers run the rank, as W threads do in the peers
    magpie::lazy_pool pool(po);
    status = mpi_uts::measure(o, "magpie", [&](mpi_uts::rank_state &s) {
      std::atomic<bool> serving{false};
      context const c{&t, &s, &pool, &serving};
      auto server = magpie::spawn(pool, serve, &c);
      // The explorer starts only once the server listens: on one worker, an explorer that ran
      // first (its worker just woke up and found both) would run the whole tree before the
      // server ever posted its receive, and the other ranks' requests would wait until the end.
      while (!serving.load(std::memory_order_acquire)) {
        std::this_thread::yield();
      }
      uts::result const r = magpie::sync_wait(pool, explore, &c);
      server.get();
      return r;
    });
  }
  return status;
}
