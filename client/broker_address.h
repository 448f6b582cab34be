// Where a broker listens, as users write it ("HOST:PORT", "[V6]:PORT") and as errors name it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/error.h"

namespace streamd::client {

struct BrokerAddress {
  std::string host;
  uint16_t port = 0;
};

inline constexpr std::string_view kDefaultBroker = "127.0.0.1:7411";

// "HOST:PORT" or "[V6]:PORT"; STREAM_MISCONFIGURED (field broker) otherwise.
Result<BrokerAddress> parse_broker_address(std::string_view text);

// The address as parse_broker_address reads it back.
std::string address_text(const BrokerAddress& broker);

// UNAVAILABLE naming the broker and why (fields broker, reason): the error of every failure to reach
// one, which the retrying layers retry.
Error broker_unavailable(const BrokerAddress& broker, std::string reason);

}  // namespace streamd::client
