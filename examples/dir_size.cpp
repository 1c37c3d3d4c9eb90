// Disk usage of a directory tree, one task per subdirectory (like `du -s --apparent-size`, which
// counts file sizes, not blocks).
//
//   magpie_example_dir_size PATH   walks PATH and prints its files, bytes and directories
//   magpie_example_dir_size        builds a known tree in a temporary directory, walks it, checks
//                                  the totals, and removes it
//
// Symbolic links are not followed; entries that cannot be read are counted and skipped. The
// walk does blocking file-system calls on the pool's workers, which is fine for a command-line
// tool that has nothing else to run; a server would rather not block its workers.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "magpie/magpie.hpp"

namespace fs = std::filesystem;

namespace {

// [walk]
struct usage {
  std::uintmax_t files = 0;
  std::uintmax_t bytes = 0;
  std::uintmax_t directories = 0;
  std::uintmax_t unreadable = 0; // entries skipped because of an error
};

magpie::task<usage> walk(fs::path const &dir) {
  usage total{0, 0, 1, 0};
  std::vector<fs::path> subdirectories;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    fs::file_status const st = it->symlink_status(ec);
    if (ec) {
      break;
    }
    if (fs::is_directory(st)) {
      subdirectories.push_back(it->path());
    } else if (fs::is_regular_file(st)) {
      std::uintmax_t const size = it->file_size(ec);
      if (ec) {
        ++total.unreadable;
        ec.clear();
        continue;
      }
      ++total.files;
      total.bytes += size;
    }
  }
  if (ec) {
    ++total.unreadable;
  }

  // One child per subdirectory, each writing into its slot of an array on this task's stack.
  auto sub = co_await magpie::stack_alloc<usage>(subdirectories.size());
  for (std::size_t i = 0; i < subdirectories.size(); ++i) {
    co_await magpie::fork(&sub[i], walk, subdirectories[i]);
  }
  co_await magpie::join();
  for (usage const &u : sub) {
    total.files += u.files;
    total.bytes += u.bytes;
    total.directories += u.directories;
    total.unreadable += u.unreadable;
  }
  co_return total;
}
// [walk]

/// Builds `fanout` subdirectories per level, `depth` levels deep, each directory holding three
/// files of sizes derived from its position; returns the totals that `walk` must find.
usage make_tree(fs::path const &dir, int depth, int fanout, std::size_t seed = 1) {
  fs::create_directory(dir);
  usage u{0, 0, 1, 0};
  for (std::size_t f = 0; f < 3; ++f) {
    std::size_t const size = (seed * 131 + f * 977) % 4096;
    std::ofstream(dir / ("file" + std::to_string(f))) << std::string(size, 'x');
    ++u.files;
    u.bytes += size;
  }
  if (depth > 1) {
    for (int d = 0; d < fanout; ++d) {
      usage const sub = make_tree(dir / ("dir" + std::to_string(d)), depth - 1, fanout,
                                  seed * 7 + static_cast<std::size_t>(d));
      u.files += sub.files;
      u.bytes += sub.bytes;
      u.directories += sub.directories;
    }
  }
  return u;
}

} // namespace

int main(int argc, char **argv) {
  magpie::lazy_pool pool;
  if (argc > 1) {
    fs::path const root = argv[1];
    usage const u = magpie::sync_wait(pool, walk, root);
    std::printf("%s: %ju files, %ju bytes, %ju directories (%ju unreadable entries skipped)\n",
                root.c_str(), u.files, u.bytes, u.directories, u.unreadable);
    return EXIT_SUCCESS;
  }
  std::string tmp = (fs::temp_directory_path() / "magpie_dir_size_XXXXXX").string();
  if (::mkdtemp(tmp.data()) == nullptr) { // POSIX: creates a fresh directory
    std::perror("mkdtemp");
    return EXIT_FAILURE;
  }
  fs::path const root = fs::path(tmp) / "tree";
  usage const expected = make_tree(root, 5, 4);
  usage const u = magpie::sync_wait(pool, walk, root);
  fs::remove_all(tmp);
  bool const ok = u.files == expected.files && u.bytes == expected.bytes &&
                  u.directories == expected.directories && u.unreadable == 0;
  std::printf("%ju files, %ju bytes, %ju directories: %s\n", u.files, u.bytes, u.directories,
              ok ? "ok" : "WRONG");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
