// FileEngine: streams kept in one data directory — the StreamStore of server/storage (segments, indexes,
// group offset logs; layout in docs/FORMAT.md), behind the StreamEngine seam. Every append and commit
// is answered after the fdatasync that covers it, so what was acknowledged survives a crash.
#pragma once

#include <memory>
#include <string>

#include "server/broker/stream_engine.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/partition_log.h"
#include "server/storage/stream_store.h"

namespace streamd {

class FileEngine final : public StreamEngine {
 public:
  // Locks, checks and recovers `data_dir` (StreamStore::open). Appends and commits sync on `storage`,
  // which also runs the sweeps that keep at most `max_open_files` partition files open (0: no limit).
  // The journal, when partition_options.journal_group_bytes allows one, starts a checkpoint each time its
  // file holds `journal_file_bytes`.
  static Result<std::unique_ptr<FileEngine>> open(FileSystem& fs, const std::string& data_dir,
                                                  Executor& storage, const Clock& clock,
                                                  const PartitionOptions& partition_options,
                                                  uint64_t max_open_files = 0,
                                                  uint64_t journal_file_bytes = JournalOptions{}.file_bytes,
                                                  ProducerBounds producers = {});

  const char* kind() const override { return "file"; }
  bool durable() const override { return true; }
  uint64_t size_bytes() const override;

  Result<std::shared_ptr<EngineStream>> create(const std::string& name, const Policy& policy) override;
  Status remove(const std::string& name) override;
  Result<Policy> alter(const std::string& name, const PolicyEdit& edit) override;
  Result<std::shared_ptr<EngineStream>> find(const std::string& name) const override;
  std::vector<std::shared_ptr<EngineStream>> list() const override;
  void close() override;
  Result<ProducerIdentity> init_producer(std::optional<ProducerIdentity> current) override;
  const ProducerLimits& producers() const override { return store_->producers(); }
  // <data_dir>/TRANSACTIONS.
  TxnLog* transactions() override { return txns_.get(); }

 private:
  FileEngine(std::unique_ptr<StreamStore> store, std::unique_ptr<TxnLog> txns)
      : store_(std::move(store)), txns_(std::move(txns)) {}

  std::unique_ptr<StreamStore> store_;
  std::unique_ptr<TxnLog> txns_;
};

}  // namespace streamd
