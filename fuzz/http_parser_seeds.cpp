// Writes the seed corpus for fuzz_http_parser: requests the controller serves, and near misses.
#include <string>
#include <vector>

#include "seed_corpus.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> seeds = {
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
      "POST /api/v1/report HTTP/1.1\r\nHost: c\r\nAuthorization: Bearer abcdefgh\r\n"
      "Content-Type: application/x-weft-report\r\nContent-Length: 4\r\n\r\nWFT1",
      "GET /api/v1/mesh?protocol=udp&format=columns&group=rack%2D1 HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
      "GET /api/v1/pairs/a/b/history?since=1.5&limit=10 HTTP/1.0\nConnection: keep-alive\n\n",
      "DELETE /api/v1/agents/x?force=1 HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
      "GET /assets/app.js HTTP/1.1\r\nIf-None-Match: \"abc\"\r\n\r\nGET / HTTP/1.1\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
  };
  return weft::fuzz::write_seed_corpus(argc, argv, seeds);
}
