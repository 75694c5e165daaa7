#pragma once
// The one main() body of every seed generator (fuzz/*_seeds.cpp): each generator builds its seeds
// and hands them here, which writes them as CORPUS_DIR/seed0, seed1, ... for the fuzzer's ctest.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace weft::fuzz {

// Seeds: a range of byte containers (std::string, std::vector<uint8_t>) with data() and size().
// Returns main()'s exit code: 0, 1 when a file could not be written, 2 on a usage error.
template <class Seeds>
int write_seed_corpus(int argc, char** argv, const Seeds& seeds) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::perror(dir.c_str());
    return 1;
  }
  size_t n = 0;
  for (const auto& seed : seeds) {
    const std::string path = dir + "/seed" + std::to_string(n++);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
      std::perror(path.c_str());
      return 1;
    }
    const bool ok = std::fwrite(seed.data(), 1, seed.size(), f) == seed.size();
    if (std::fclose(f) != 0 || !ok) {
      std::perror(path.c_str());
      return 1;
    }
  }
  std::printf("wrote %zu seeds to %s\n", n, dir.c_str());
  return 0;
}

}  // namespace weft::fuzz
