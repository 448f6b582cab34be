// The client's placement rule: the protocol's, defined once in proto/placement.h so producers group
// records exactly as the broker routes them.
#pragma once

#include "proto/placement.h"

namespace streamd::client {

using placement::fnv1a32;
using placement::partition_of;

}  // namespace streamd::client
