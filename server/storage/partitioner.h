// The broker's placement rule: the protocol's, defined once in proto/placement.h so the broker and
// every client place a key on the same partition.
#pragma once

#include "proto/placement.h"

namespace streamd {

using placement::fnv1a32;
using placement::partition_of;

}  // namespace streamd
