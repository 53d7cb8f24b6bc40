// Package metrics exports actord's executor statistics to Prometheus.
//
// A Collector is a prometheus.Collector that reads an executor's statistics
// snapshot (executor.Stats) when Prometheus scrapes, and at no other time:
// the workers count with plain increments on their hot paths and publish
// their counters only when a scrape asks (see executor.Executor.Stats), so
// exporting costs the actor system nothing between scrapes. The core
// packages (actor, executor, stealing) do not import client_golang: only
// this package, cmd/actord and the remote module's remotemetrics do.
//
// # Systems come and go, counters do not go back
//
// An executor's statistics are cumulative for the life of one System, and a
// program may run many systems one after the other (the actord server runs
// each benchmark program on a fresh one). A Collector follows one current
// system at a time: Attach makes a new system current and folds the final
// statistics of the one it replaces into retired totals. Every counter
// reports retired plus current, so it never decreases across systems, as
// Prometheus requires of counters. Gauges (live actors, parked workers,
// queued messages, workers, queues, pending requests and timers) describe
// the current system alone.
//
// # Metrics
//
// Per-worker metrics carry a worker label, the worker's index ("0", "1",
// ...). Messages sent is system-wide (no worker label), because the executor
// counts sends per mailbox rather than per worker; so are the request and
// timer metrics, which the executor counts for the whole system (a request
// or a timer is not tied to a worker), and the watch and bounded-mailbox
// metrics (a send to a full mailbox may come from any goroutine). The
// supervision metrics (restarts, resumes, escalations, exhausted restart
// budgets) are per worker: the worker that ran the panicking behaviour.
// Actors spawned from goroutines that are not workers are counted under
// worker="external".
//
//	actord_messages_sent_total                      messages sent, pills included (system-wide)
//	actord_messages_processed_total{worker}         messages whose behaviour the worker ran
//	actord_local_sends_total{worker}                sends appended to the batch the worker was draining
//	actord_gulp_size{worker}                        histogram: messages taken per gulp (_count = gulps)
//	actord_batch_waits_total{worker}                pauses to let a batch from outside gather before a pass
//	actord_deferred_serves_total{worker}            parked workers' mailboxes served for deferred wake-ups
//	actord_caller_visits_total{worker}              visits made as the parked worker by callers waiting for a reply
//	actord_missed_gulps_total{worker}               non-empty mailboxes found being processed elsewhere
//	actord_steal_attempts_total{worker}             times the worker acted as a thief
//	actord_steal_failures_total{worker,reason}      failed attempts: reason="no_candidate" or "failed_swap"
//	actord_steals_total{worker}                     successful queue swaps, empty ones included
//	actord_empty_steals_total{worker}               successful swaps of a mailbox empty by then
//	actord_steal_size{worker}                       histogram: messages in each non-empty stolen mailbox
//	actord_steal_wakeups_total{worker}              parked workers woken because this worker had a backlog
//	actord_stalled_steals_total{worker}             mailboxes taken early from a stalled worker (CPU contention)
//	actord_parks_total{worker}                      times the worker went to sleep
//	actord_wakeups_total{worker,cause}              sleeps ended: cause="sender" or "timeout"
//	actord_parked_seconds_total{worker}             time spent asleep
//	actord_thread_releases_total{worker}            sleeps that gave the worker's OS thread back to the runtime
//	actord_actors_created_total{worker}             actors spawned (worker="external": from other goroutines)
//	actord_actors_terminated_total{worker}          actors terminated
//	actord_dead_letters_total{worker}               messages dropped because their actor had terminated
//	actord_dropped_messages_total{worker}           messages dropped by a forced stop
//	actord_panics_total{worker}                     behaviours that panicked
//	actord_live_actors                              actors spawned and not yet terminated
//	actord_parked_workers                           workers asleep
//	actord_queued_messages                          user messages waiting for the actors, not yet taken
//	actord_workers                                  worker threads
//	actord_queues                                   mailboxes
//	actord_stale_workers                            workers whose counters were not fresh at this scrape
//	actord_stats_snapshot_duration_seconds          time the last statistics snapshot took
//	actord_asks_pending                             requests (Ask, AskAsync) waiting for their answer
//	actord_asks_timed_out_total                     requests ended by their requester's context or timeout
//	actord_late_replies_total                       replies that came after their request had ended, dropped
//	actord_timers_pending                           timers set and not yet fired or stopped
//	actord_timers_fired_total                       timer deliveries (each firing of a periodic timer)
//	actord_timer_dead_letters_total                 timer firings dropped: their port's actor had terminated
//	actord_restarts_total{worker}                   actors restarted after a panic (WithRestart, Failure.Restart)
//	actord_resumes_total{worker}                    failing messages dropped by actors spawned WithResume
//	actord_escalations_total{worker}                panics handed to a supervisor (WithEscalate)
//	actord_restart_budget_exhausted_total{worker}   actors terminated for exceeding their restart budget
//	actord_passivations_total{worker}               actors ended by idle passivation (WithPassivation)
//	actord_watch_notifications_total                Terminated notices sent to watchers (Watch, WatchChan)
//	actord_mailbox_overflows_total{reason}          sends to a full bounded mailbox: reason="reject",
//	                                                "drop_newest" or "drop_oldest" (WithMailbox's Overflow)
//
// The two histograms are per worker and use the executor's power-of-two
// buckets (executor.BucketUpperBound: le="0", "1", "2", "4", ... "1.048576e+06",
// "+Inf"), so no information is lost in conversion; their _count and _sum
// give gulps and messages gulped, and messages stolen, without separate
// counters. Sum them by le for the whole system's distribution.
//
// Workload (see NewWorkload) adds the actord server's own workload metrics,
// and NewRegistry builds a registry with the Go runtime and process
// collectors beside them, never the global default registry.
package metrics
