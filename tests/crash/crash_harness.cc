#include "tests/crash/crash_harness.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <thread>

#include "tests/crash/recovery_log.h"
#include "tests/crash/requests.h"
#include "tests/crash/resends.h"
#include "tests/crash/txn_workload.h"
#include "tests/crash/verifier.h"
#include "tests/integration/wire_client.h"
#include "tests/powercut/powercut_fs.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd::crash {
namespace {

// A start recovers every segment written since the first cycle (trims take back only a part), through
// the filesystem's process, at whatever priority the run has: slow starts are measured and reported,
// and only a start that never comes fails the run.
constexpr auto kStartTimeout = std::chrono::seconds(300);

// Segment logs under the data directory: what a start has to open.
uint64_t segment_count(const std::string& data_dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(data_dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == 24 && name.ends_with(".log")) ++n;
  }
  return n;
}

InFlight in_flight_of(Ledger& ledger) {
  std::lock_guard lock(ledger.mutex());
  InFlight out;
  for (const auto& [name, inc] : ledger.incarnations()) {
    if (inc->life == Life::kCreating) out.creates.insert(name);
    if (inc->life == Life::kDeleting) out.deletes.insert(name);
  }
  // An acknowledged delete removes the stream's files after its rename is synced, and a cut may
  // interrupt that; the next start removes the rest.
  for (const std::string& name : ledger.deletes_acknowledged()) out.deletes.insert(name);
  return out;
}

std::string tail(const std::string& log, size_t from, size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(from < log.size() ? log.substr(from) : std::string());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i) {
    out += "    " + lines[i] + "\n";
  }
  return out;
}

// Keeps the data directory and the daemon's log of a failed run, which the temp dir would take with it.
std::string keep_evidence(const std::string& mount, const std::string& log_path, uint64_t seed, uint64_t cycle) {
  const std::string dir = "/tmp/streamd-crash-failure-" + std::to_string(::getpid()) + "-seed" +
                          std::to_string(seed) + "-cycle" + std::to_string(cycle);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::copy(mount + "/data", dir + "/data", std::filesystem::copy_options::recursive, ec);
  std::filesystem::copy_file(log_path, dir + "/streamd.log", ec);
  return dir;
}

void add(Totals& t, const WorkloadCounts& c) {
  t.appends_sent += c.appends_sent;
  t.appends_acknowledged += c.appends_acknowledged;
  t.records_acknowledged += c.records_acknowledged;
  t.appends_refused += c.appends_refused;
  t.records_read_by_consumers += c.records_read;
  t.commits_sent += c.commits_sent;
  t.commits_acknowledged += c.commits_acknowledged;
  t.trims_sent += c.trims_sent;
  t.trims_acknowledged += c.trims_acknowledged;
  t.creates_sent += c.creates_sent;
  t.creates_acknowledged += c.creates_acknowledged;
  t.deletes_sent += c.deletes_sent;
  t.deletes_acknowledged += c.deletes_acknowledged;
}

void add(Totals& t, const powercut::CutReport& r, const RecoveryLines& lines, const VerifyCounts& v) {
  t.files_unsynced += r.files_unsynced;
  t.pages_unsynced += r.pages_unsynced;
  t.pages_kept += r.pages_kept;
  t.pages_torn += r.pages_torn;
  t.dir_changes_unsynced += r.dir_changes_unsynced;
  t.dir_changes_kept += r.dir_changes_kept;
  t.torn_segment_tails += lines.torn_segment_tails;
  t.torn_group_tails += lines.torn_group_tails;
  t.reordered_tails += lines.reordered_tails;
  t.index_rebuilds += lines.index_rebuilds;
  t.interrupted_creates += lines.interrupted_creates;
  t.interrupted_deletes += lines.interrupted_deletes;
  t.records_verified += v.records;
  t.acknowledged_batches_verified += v.acknowledged_batches;
  t.acknowledged_records_verified += v.acknowledged_records;
  t.unacknowledged_kept += v.unacknowledged_kept;
  t.unacknowledged_lost += v.unacknowledged_lost;
  t.commits_verified += v.commits;
  t.trims_verified += v.trims;
  t.streams_decided += v.streams_decided;
  t.streams_in_flight += v.streams_in_flight;
}

}  // namespace

Totals run_harness(const HarnessOptions& options, std::ostream& out) {
  Totals totals;
  const auto started = std::chrono::steady_clock::now();
  testing::TempDir work;
  const std::string mount = work.file("mnt");
  std::filesystem::create_directory(mount);
  std::string error;
  auto fs = powercut::PowerCutFs::mount(mount, &error);
  if (!fs) {
    out << "crash-test: " << error << "\n";
    totals.failures = 1;
    return totals;
  }
  // Small journal files: checkpoints (segments synced, a journal file removed) run every few hundred
  // milliseconds of load, so that cuts land before, during and after them.
  std::vector<std::string> args{"--data-dir", mount + "/data", "--auto-create-streams", "false",
                                "--retention-check-period", "0", "--storage.journal-file-bytes", "256KiB"};
  args.insert(args.end(), options.daemon_args.begin(), options.daemon_args.end());

  Ledger ledger;
  std::mt19937_64 rng(options.seed);
  testing::DaemonProcess daemon(args);
  if (!daemon.start(kStartTimeout)) {
    out << "crash-test: streamd did not start\n" << tail(daemon.log(), 0, 30);
    totals.failures = 1;
    return totals;
  }
  {
    // Every name but one starts with a stream; the administrator creates and deletes from there.
    testing::WireClient admin(daemon.port());
    const auto& names = options.workload.stream_names;
    for (size_t i = 0; i + 1 < names.size(); ++i) {
      const NewStream policy = random_stream(rng);
      const uint64_t incarnation = ledger.create_sent(names[i], policy.partitions, policy.segment_bytes);
      v1::Response r = admin.call(create_of(names[i], policy.partitions, policy.segment_bytes));
      if (!r.has_create_stream()) {
        out << "crash-test: cannot create stream " << names[i] << ": " << testing::error_name(r) << "\n";
        totals.failures = 1;
        return totals;
      }
      ledger.create_acknowledged(names[i], incarnation, 0);
    }
  }
  if (!create_txn_streams(daemon.port())) {
    out << "crash-test: cannot create the transactional producer's streams\n";
    totals.failures = 1;
    return totals;
  }
  TxnLedger txn_ledger;
  // Checks the transactions after a restart; what it finds wrong fails the cycle.
  auto verify_txns = [&](uint64_t cycle) {
    std::vector<std::string> wrong;
    const TxnVerifyCounts found = verify_transactions(daemon.port(), txn_ledger, wrong);
    for (const std::string& w : wrong) ledger.fail("cycle " + std::to_string(cycle) + ": " + w);
    totals.txns_whole = found.transactions_seen;
    return found;
  };

  size_t failures_seen = 0;
  for (uint64_t cycle = 1; cycle <= options.cycles; ++cycle) {
    const powercut::CutMode mode =
        options.mode ? *options.mode : ((rng() & 1) != 0 ? powercut::CutMode::kTorn : powercut::CutMode::kDiscard);
    const auto span = static_cast<uint64_t>((options.max_run - options.min_run).count());
    const auto run_for = options.min_run + std::chrono::milliseconds(span == 0 ? 0 : rng() % (span + 1));
    // Some cycles cut the power while the daemon shuts down cleanly: its close seals segments, writes
    // clean markers and checkpoints the journal, each of which a cut may interrupt.
    const bool during_shutdown = rng() % 8 == 0;
    const auto shutdown_for = std::chrono::milliseconds(rng() % 30);
    WorkloadCounts counts;
    TxnCounts txn_counts;
    std::atomic<bool> power_cut{false};
    powercut::CutReport cut;
    {
      WorkloadOptions workload_options = options.workload;
      workload_options.seed = options.seed * 1'000'003 + cycle;
      Workload workload(daemon.port(), ledger, power_cut, workload_options, counts);
      TxnWorkload transactions(daemon.port(), txn_ledger, power_cut, workload_options.seed, txn_counts);
      // The kernel writes back what the daemon stored through its mappings (the indexes) at moments
      // of its own choosing; so does this thread, so that a cut finds such stores on the disk, whole,
      // torn or missing, as a real one can.
      std::thread writeback([&fs, &power_cut, seed = rng()] {
        std::mt19937_64 pace(seed);
        while (!power_cut) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1 + pace() % 50));
          fs->write_back();
        }
      });
      std::this_thread::sleep_for(run_for);
      if (during_shutdown) {
        daemon.signal(SIGTERM);
        std::this_thread::sleep_for(shutdown_for);
      }
      power_cut = true;
      writeback.join();
      cut = fs->cut(mode, rng());
      daemon.kill9();
      workload.stop();
      transactions.stop();
    }
    const InFlight in_flight = in_flight_of(ledger);
    if (!fs->restore(&error)) {
      ledger.fail("cycle " + std::to_string(cycle) + ": the filesystem does not mount again: " + error);
      break;
    }
    std::error_code ec;
    const size_t log_from = static_cast<size_t>(std::filesystem::file_size(daemon.log_path(), ec));
    const uint64_t segments = segment_count(mount + "/data");
    const auto start_began = std::chrono::steady_clock::now();
    const bool came_up = daemon.start(kStartTimeout);
    const double start_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_began).count();
    totals.segments_at_end = segments;
    if (start_s > totals.slowest_start_s) {
      totals.slowest_start_s = start_s;
      totals.slowest_start_cycle = cycle;
      totals.segments_at_slowest_start = segments;
    }
    if (!came_up) {
      ledger.fail("cycle " + std::to_string(cycle) + ": streamd did not start again (exit " +
                  std::to_string(daemon.exit_code().value_or(-1)) + "):\n" + tail(daemon.log(), log_from, 30));
    } else {
      const RecoveryLines lines = recovery_lines(daemon.log(), log_from);
      VerifyCounts verified;
      {
        testing::WireClient client(daemon.port());
        Verifier verifier(ledger, client);
        verified = verifier.run();
      }
      for (auto& w : check_recovery(lines, cut, mode, in_flight, mount)) ledger.fail(w);
      const ResendCounts resent = resend(ledger, daemon.port());
      const TxnVerifyCounts txns_found = verify_txns(cycle);
      totals.txns_committed += txn_counts.committed;
      totals.txns_aborted += txn_counts.aborted;
      totals.txns_unanswered += txn_counts.unanswered;
      totals.txns_refused += txn_counts.refused;
      totals.resends_recognised += resent.recognised;
      totals.resends_written += resent.written;
      if (lines.ready_streams != static_cast<int64_t>(verified.streams) ||
          lines.ready_partitions != static_cast<int64_t>(verified.partitions)) {
        ledger.fail("recovery log: the ready line says " + std::to_string(lines.ready_streams) + " streams / " +
                    std::to_string(lines.ready_partitions) + " partitions, the broker lists " +
                    std::to_string(verified.streams) + " / " + std::to_string(verified.partitions));
      }
      add(totals, counts);
      add(totals, cut, lines, verified);
      ++totals.cycles;
      ++(mode == powercut::CutMode::kTorn ? totals.torn_cycles : totals.discard_cycles);
      out << "cycle " << cycle << " " << (mode == powercut::CutMode::kTorn ? "torn" : "discard") << " after "
          << run_for.count() << " ms"
          << (during_shutdown ? " + " + std::to_string(shutdown_for.count()) + " ms into a clean shutdown" : "")
          << ": " << counts.appends_acknowledged << " appends acknowledged ("
          << counts.records_acknowledged << " records), " << counts.commits_acknowledged << " commits, "
          << counts.trims_acknowledged << " trims, " << counts.creates_acknowledged << " creates, "
          << counts.deletes_acknowledged << " deletes | cut: " << cut.files_unsynced << " files unsynced, "
          << cut.pages_kept << "/" << cut.pages_unsynced << " pages kept, " << cut.pages_torn << " torn, "
          << cut.dir_changes_kept << "/" << cut.dir_changes_unsynced << " dir changes kept | recovery: "
          << lines.torn_segment_tails + lines.torn_group_tails << " torn tails, " << lines.reordered_tails
          << " reordered, " << lines.index_rebuilds
          << " index rebuilds | verified " << verified.records << " records, " << verified.acknowledged_batches
          << " acknowledged batches, " << verified.unacknowledged_kept << " unacknowledged kept, "
          << verified.unacknowledged_lost << " lost, " << resent.recognised << " resends recognised, "
          << resent.written << " written | transactions: " << txn_counts.committed << " committed, "
          << txn_counts.aborted << " aborted, " << txn_counts.unanswered << " ends unanswered, "
          << txns_found.transactions_seen << " whole at read_committed | started in " << std::fixed << std::setprecision(1) << start_s
          << " s over " << segments << " segments\n";
    }
    // One cycle in three ends with a clean restart, so that the next cycle's load and cut meet
    // partitions that kept their clean markers (closed at start, known by their summaries) beside the
    // ones it writes, and the clean close itself is checked.
    if (came_up && ledger.failures().size() == failures_seen && rng() % 3 == 0) {
      const int stopped = daemon.stop();
      if (stopped != 0) {
        ledger.fail("cycle " + std::to_string(cycle) + ": a clean stop exited " + std::to_string(stopped));
      } else if (!daemon.start(kStartTimeout)) {
        ledger.fail("cycle " + std::to_string(cycle) + ": streamd did not start again after a clean stop");
      } else {
        testing::WireClient client(daemon.port());
        Verifier verifier(ledger, client);
        const VerifyCounts again = verifier.run();
        verify_txns(cycle);
        ++totals.clean_restarts;
        out << "cycle " << cycle << ": clean restart, verified " << again.records << " records again\n";
      }
    }
    const auto failures = ledger.failures();
    if (failures.size() > failures_seen) {
      for (size_t i = failures_seen; i < failures.size(); ++i) out << "FAILED: " << failures[i] << "\n";
      failures_seen = failures.size();
      daemon.kill9();
      out << "evidence kept in " << keep_evidence(mount, daemon.log_path(), options.seed, cycle) << "\n";
      if (!options.keep_going || !daemon.start(kStartTimeout)) break;
    }
  }
  if (daemon.running()) daemon.stop();
  totals.failures = ledger.failures().size();
  totals.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return totals;
}

void print_totals(const Totals& t, std::ostream& out) {
  out << "crash-test totals over " << t.cycles << " cycles (" << t.discard_cycles << " discard, " << t.torn_cycles
      << " torn; " << t.clean_restarts << " ended by a clean restart) in " << std::fixed << std::setprecision(0)
      << t.seconds << " s\n"
      << "  sent:      " << t.appends_sent << " appends, " << t.appends_acknowledged << " acknowledged ("
      << t.records_acknowledged << " records), " << t.appends_refused << " refused before a cut; "
      << t.records_read_by_consumers << " records read by consumers; " << t.commits_acknowledged << "/"
      << t.commits_sent << " commits, " << t.trims_acknowledged << "/" << t.trims_sent << " trims, "
      << t.creates_acknowledged << "/" << t.creates_sent << " creates, " << t.deletes_acknowledged << "/"
      << t.deletes_sent << " deletes acknowledged\n"
      << "  cuts:      " << t.files_unsynced << " files held unsynced writes; " << t.pages_unsynced
      << " unsynced pages: " << t.pages_kept << " kept, " << t.pages_torn << " torn, the rest lost; "
      << t.dir_changes_unsynced << " unsynced directory changes, " << t.dir_changes_kept << " kept\n"
      << "  recovery:  " << t.torn_segment_tails << " torn segment tails, " << t.torn_group_tails
      << " torn GROUPS tails, " << t.reordered_tails << " reordered tails (reported CORRUPT, each the cut's doing), "
      << t.index_rebuilds << " index rebuilds, " << t.interrupted_creates
      << " interrupted creates, " << t.interrupted_deletes << " interrupted deletes removed\n"
      << "  verified:  " << t.records_verified << " records read back; " << t.acknowledged_batches_verified
      << " acknowledged batches (" << t.acknowledged_records_verified << " records) whole at their offsets; "
      << t.unacknowledged_kept << " unacknowledged batches kept whole, " << t.unacknowledged_lost << " lost; "
      << t.resends_recognised << " resent after the cut answered with the offsets they were kept at, "
      << t.resends_written << " written by their resend; "
      << t.commits_verified << " group commits, " << t.trims_verified << " trims, " << t.streams_decided
      << " acknowledged creates/deletes, " << t.streams_in_flight << " in-flight creates/deletes\n"
      << "  transactions: " << t.txns_committed << " answered committed, " << t.txns_aborted << " answered aborted, "
      << t.txns_unanswered << " ends left unanswered by a cut, " << t.txns_refused
      << " refused; every one whole or absent, " << t.txns_whole << " whole at read_committed at the end\n"
      << "  restarts:  slowest " << std::setprecision(1) << t.slowest_start_s << " s (cycle " << t.slowest_start_cycle
      << ", " << t.segments_at_slowest_start << " segments on disk); " << t.segments_at_end
      << " segments at the last restart\n"
      << "  failures:  " << t.failures << "\n";
}

}  // namespace streamd::crash
