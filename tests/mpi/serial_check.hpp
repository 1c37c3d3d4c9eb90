#pragma once
// The serialised run's check (serial_check.cpp): MPI calls that overlapped in time.

#include <atomic>

namespace magpie::test::serial_check {
/// Whether overlaps are counted (main.cpp: only in the run under MPI_THREAD_SERIALIZED).
extern std::atomic<bool> enabled;
/// MPI calls that began while another was in progress, since `enabled` was set.
extern std::atomic<long> overlaps;
/// MPI calls seen (checked or not).
extern std::atomic<long> calls;
} // namespace magpie::test::serial_check
