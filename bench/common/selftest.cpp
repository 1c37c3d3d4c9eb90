// bench/common/selftest.cpp — checks the building blocks of the problems against the vectors
// of BENCHMARKS.md before anything is measured: SHA-1, the UTS trees (serially and on magpie),
// the Zipf cost sample, and the small check values of fib, nqueens and integrate.
// Exit status 0 when every check passes; scripts/bench.py refuses to measure otherwise.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "integrate/problem.hpp"
#include "magpie/magpie.hpp"
#include "nqueens/problem.hpp"
#include "uts/problem.hpp"
#include "zipf/problem.hpp"

namespace {

int failures = 0;

void expect(bool ok, std::string const &what) {
  std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what.c_str());
  failures += ok ? 0 : 1;
}

std::string hex(uts::digest const &d) {
  std::string s;
  char buf[3];
  for (auto b : d) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    s += buf;
  }
  return s;
}

uts::result visit(uts::tree const &t, uts::node const &n) {
  int const k = uts::num_children(t, n);
  if (k == 0) {
    return uts::leaf(n);
  }
  std::vector<uts::slot> kids(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    kids[i].n = uts::child(n, i);
    kids[i].r = visit(t, kids[i].n);
  }
  return uts::combine(n, kids);
}

magpie::task<uts::result> visit_magpie(uts::tree const *t, uts::node const *n) {
  int const k = uts::num_children(*t, *n);
  if (k == 0) {
    co_return uts::leaf(*n);
  }
  auto kids = co_await magpie::stack_alloc<uts::slot>(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    kids[i].n = uts::child(*n, i);
  }
  for (int i = 0; i < k; ++i) {
    co_await magpie::fork(&kids[i].r, visit_magpie, static_cast<uts::tree const *>(t), &kids[i].n);
  }
  co_await magpie::join();
  co_return uts::combine(*n, kids);
}

long nq(int n, int j, nqueens_problem::board a) {
  if (j == n) {
    return 1;
  }
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    nqueens_problem::board b = a;
    b[j] = static_cast<char>(i);
    if (nqueens_problem::ok(b, j)) {
      sum += nq(n, j + 1, b);
    }
  }
  return sum;
}

long integ_calls = 0;
int integ_depth = 0;
double integ(double x1, double y1, double x2, double y2, double area, double eps, int depth) {
  ++integ_calls;
  integ_depth = depth > integ_depth ? depth : integ_depth;
  using integrate_problem::f;
  double const half = (x2 - x1) / 2;
  double const x0 = x1 + half;
  double const y0 = f(x0);
  double const a1 = (y1 + y0) / 2 * half;
  double const a2 = (y0 + y2) / 2 * half;
  double const a12 = a1 + a2;
  if (a12 - area < eps && area - a12 < eps) {
    return a12;
  }
  double const l = integ(x1, y1, x0, y0, a1, eps, depth + 1);
  return l + integ(x0, y0, x2, y2, a2, eps, depth + 1);
}

} // namespace

int main(int argc, char **argv) {
  bool const full = argc > 1 && std::strcmp(argv[1], "--full") == 0;

  // SHA-1 (FIPS 180 vectors) and the UTS roots.
  expect(hex(uts::sha1("abc", 3)) == "a9993e364706816aba3e25717850c26c9cd0d89d", "SHA1(\"abc\")");
  expect(hex(uts::sha1("", 0)) == "da39a3ee5e6b4b0d3255bfef95601890afd80709", "SHA1(\"\")");
  char const *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  expect(hex(uts::sha1(two_blocks, std::strlen(two_blocks))) ==
             "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
         "SHA1(448-bit message)");
  uts::tree const &t1 = uts::find("T1-paper");
  uts::tree r0 = t1;
  r0.r = 0;
  expect(hex(uts::root(r0).state) == hex(uts::sha1(std::string(20, '\0').data(), 20)),
         "UTS root r=0 = SHA1 of 20 zero bytes (6768033e...818f8f)");
  expect(hex(uts::root(r0).state).rfind("6768033e", 0) == 0 &&
             hex(uts::root(r0).state).ends_with("818f8f"),
         "UTS root r=0 prefix/suffix");
  uts::node const root = uts::root(t1);
  expect(hex(root.state) == "c6988ab70cc9559ae4d6cba254e29a845a85f86b", "UTS root r=19");
  expect(uts::num_children(t1, root) == 5, "T1 root has 5 children");
  uts::node const c0 = uts::child(root, 0);
  expect(hex(c0.state) == "2fb3131030280c1617a81d6a49c1e29effb19645", "T1 child 0 state");
  expect(uts::num_children(t1, c0) == 27, "T1 child 0 has 27 children");

  // Small trees with reference counts, serially and on a 2-worker magpie pool.
  magpie::lazy_pool pool(2);
  for (char const *name : {"T1-d7", "bin-20", "linear"}) {
    uts::tree const &t = uts::find(name);
    uts::node const r = uts::root(t);
    expect(uts::check(visit(t, r), t).kind == bench::verdict::ok,
           std::string("UTS ") + name + " serial: " + uts::to_string(visit(t, r)));
    uts::result const m = magpie::sync_wait(pool, visit_magpie, &t, &r);
    expect(uts::check(m, t).kind == bench::verdict::ok,
           std::string("UTS ") + name + " magpie: " + uts::to_string(m));
  }

  // Zipf: N = 512 costs sum to 609,450 ns (mean 1,190 ns, CV 3.43).
  auto const ks = zipf::zipf_ks(512);
  double sum = 0;
  double sq = 0;
  for (auto k : ks) {
    sum += zipf::unit_ns * k;
    sq += zipf::unit_ns * k * zipf::unit_ns * k;
  }
  double const mean = sum / 512;
  double const cv = std::sqrt(sq / 512 - mean * mean) / mean;
  expect(sum == 609'450.0, "Zipf N=512: sum of costs " + std::to_string(sum) + " ns");
  expect(std::fabs(mean - 1190) < 1 && std::fabs(cv - 3.43) < 0.01,
         "Zipf N=512: mean " + std::to_string(mean) + " ns, CV " + std::to_string(cv));

  // nqueens and integrate check values.
  for (auto [n, want] : {std::pair{8, 92L}, std::pair{10, 724L}}) {
    expect(nq(n, 0, {}) == want, "nqueens " + std::to_string(n));
  }
  // The stored references (checked bit for bit) must be the integral to the rule's accuracy.
  for (auto const &z : integrate_problem::sizes) {
    double const want = integrate_problem::exact(z.n);
    expect(std::fabs(z.reference - want) <= 1e-8 * want,
           std::string("integrate reference for size ") + z.name + " is n^4/4 + n^2/2 within 1e-8");
  }
  auto const &z = integrate_problem::find(full ? "paper" : "small");
  double const n = z.n;
  double const got = integ(0, integrate_problem::f(0), n, integrate_problem::f(n), 0, z.epsilon, 0);
  expect(integrate_problem::check(got, z).kind == bench::verdict::ok,
         "integrate n=" + std::to_string(n) + ": " + std::to_string(integ_calls) +
             " calls, depth " + std::to_string(integ_depth) + ", the reference bit for bit");
  if (full) {
    expect(integ_calls == 350'009'975 && integ_depth == 32,
           "integrate n=10^4: 350,009,975 calls, depth 32");
  }

  std::printf("%s: %d failure(s)\n", failures == 0 ? "selftest passed" : "selftest FAILED",
              failures);
  return failures == 0 ? 0 : 1;
}
