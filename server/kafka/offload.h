// offload(): a handler whose work may block on the disk or a database (creating, changing, deleting
// and trimming topics, allocating producer ids) runs it on the blocking executor and sends the frame
// it returns from the loop, so the loop never waits for storage.
#pragma once

#include <string>
#include <utility>

#include "server/kafka/connection.h"
#include "server/kafka/services.h"

namespace streamd::kafka {

// `work` returns the whole response frame (started with the request's responder).
template <class Work>
void offload(Request& request, Work work) {
  Services& services = request.services;
  services.blocking.post([&services, responder = request.responder, work = std::move(work)]() mutable {
    std::string frame = work();
    services.loop.post([responder, frame = std::move(frame)]() mutable { responder.send(std::move(frame)); });
  });
}

}  // namespace streamd::kafka
