#include "client/broker_address.h"

#include <charconv>
#include <utility>

namespace streamd::client {

Result<BrokerAddress> parse_broker_address(std::string_view text) {
  auto bad = [&](std::string why) {
    return Error(ErrorCode::kStreamMisconfigured, "not a broker address HOST:PORT: " + why,
                 {{"field", "broker"}, {"value", std::string(text)}});
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("missing port");
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
    return bad("port is not a number in 1..65535");
  }
  return BrokerAddress{std::string(host), static_cast<uint16_t>(port)};
}

std::string address_text(const BrokerAddress& broker) {
  const bool v6 = broker.host.find(':') != std::string::npos;
  return (v6 ? "[" + broker.host + "]" : broker.host) + ":" + std::to_string(broker.port);
}

Error broker_unavailable(const BrokerAddress& broker, std::string reason) {
  return Error(ErrorCode::kUnavailable, {{"broker", address_text(broker)}, {"reason", std::move(reason)}});
}

}  // namespace streamd::client
