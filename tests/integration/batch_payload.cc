#include "tests/integration/batch_payload.h"

#include <sstream>

namespace streamd::testing {

std::string payload_of(int producer, int seq, int index, int count) {
  return "p" + std::to_string(producer) + ".b" + std::to_string(seq) + ".i" + std::to_string(index) + ".n" +
         std::to_string(count);
}

bool parse_payload(const std::string& payload, BatchPayload& out) {
  char a = 0, b = 0, c = 0, d = 0, dot1 = 0, dot2 = 0, dot3 = 0, tail = 0;
  std::istringstream in(payload);
  in >> a >> out.producer >> dot1 >> b >> out.seq >> dot2 >> c >> out.index >> dot3 >> d >> out.count;
  return !in.fail() && !(in >> tail) && a == 'p' && b == 'b' && c == 'i' && d == 'n' && dot1 == '.' &&
         dot2 == '.' && dot3 == '.' && out.count > 0 && out.index >= 0 && out.index < out.count;
}

}  // namespace streamd::testing
