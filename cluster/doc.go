// Package cluster runs virtual entities and singletons over several
// processes, with NATS as the one external engine: core NATS carries the
// messages (package remote) and JetStream key-value buckets hold the
// membership and the registry of activations. There is no gossip and no
// consensus of its own: every decision that must be unique is a
// compare-and-set on a key, decided by the JetStream server.
//
// # Using it
//
// Each process has an actor.System and a remote.Node; New makes its
// cluster member, NewKind defines the entity kinds it will address, Host
// says which of them it runs, and Join makes it a member:
//
//	node, _ := remote.Connect(sys, url, "web-1")
//	c, _ := cluster.New(sys, node, cluster.WithTTL(5*time.Second))
//	carts, _ := cluster.NewKind(c, "cart", remote.CBOR[*AddItem](), remote.CBOR[Total]())
//	cluster.Host(carts, func(id string) *Cart { return &Cart{id: id} }, (*Cart).OnAdd,
//		actor.WithPassivation(10*time.Minute))
//	err := c.Join(ctx)
//	...
//	total, err := carts.Ask(ctx, "cart-42", &AddItem{SKU: "tea"}) // from any member
//	...
//	c.Leave(ctx); node.Close(); sys.Shutdown(ctx)
//
// A kind's entities are actors of one type reached through one request
// behaviour (its message embeds actor.Request[R]); both codecs must be the
// same on every member. Kind.Get returns a remote.Asker: a local port when
// the activation runs on this member, a remote port otherwise. Kind.Ask is
// Get then Ask, retried while the request was refused before delivery.
//
// # Membership
//
// The bucket <name>_members (WithName, default "actord") has a maximum age
// of one TTL (WithTTL, default 5s) and limit markers, so that a key that is
// not rewritten expires, and its expiry shows to watchers as a delete. Each
// member's key is its node name; its value says its incarnation (random,
// new at each Join) and the kinds it hosts. Join creates the key (Create:
// it fails with ErrNameInUse if a live member has the name), a goroutine
// rewrites it every TTL/4 with compare-and-set on its last revision, and
// Leave first marks it leaving (placement then skips the member; it keeps
// the record fresh while its activations end) and at last deletes it
// (TestGetSkipsLeavingMember). So:
//
//   - a member joins and leaves in about one round trip to the server (its
//     put or delete reaches the others' watches; tested in
//     TestMembershipJoinLeave);
//   - a member that stops refreshing (it died, or lost the server) is out
//     one TTL after its last refresh, plus the server's expiry timer (about
//     1.25 TTL measured with a 1s TTL: TestMemberExpires);
//   - each member's view (Members) comes from a watch of the bucket,
//     restarted every TTL (a key-value watch does not recover by itself
//     after a reconnection; the restart reads every record afresh and
//     applies the differences): a view is at most about one TTL stale
//     after the server comes back (TestNATSServerRestart).
//
// Subscribe registers a callback for the changes of this member's view:
// MemberJoined, MemberUpdated (a new incarnation, or other kinds), and
// MemberLeft, called from one goroutine in the order the view changed.
// While the server is unreachable the view does not change: it holds the
// members as last seen.
//
// # Leases and the fence
//
// A member's lease is its key. The member counts it from the moment it
// sent its last successful refresh: the server wrote the key after that
// moment, so the key cannot expire before one TTL after it. At 4/5 of a
// TTL after that moment without a newer successful refresh, the member
// fences itself: it stops every local activation at once (every gate is
// shut first, then each activation is unexported and stopped:
// TestFenceOfManyActivationsShutsGatesWithinMargin; the gate in
// front of the behaviour, see "Rebalancing", refuses every request not
// delivered yet, queued ones included, with an error wrapping ErrFenced
// that Kind.Ask asks again; then Unexport and actor.FinishedMsg) and
// refuses new ones (ErrNotJoined) until it has joined again under a new
// incarnation. It joins again only once every stopped activation has
// ended (its refresher looks every TTL/4): a new incarnation makes the
// old one's keys takeable. Meanwhile, if the server still has its record
// (a refresh that was slow, not a partition), it keeps rewriting that
// record under the old incarnation, marked fenced (placement on the
// others skips it, and rebalancing moves nothing to it:
// TestPlacementSkipsFencedMember), so that no other member takes those
// keys over while they end (TestRejoinWaitsForFencedActivations: a
// behaviour of 3 TTLs outlives the fence, and the id is activated
// elsewhere only after it ended). A behaviour that never returns keeps
// the member out so: in the others' views, refusing activations, until
// it returns or the member leaves. The fence stays armed while a member
// leaves: a Leave that begins cut off from the server (its leaving write
// waits for up to 4/5 of a TTL) still stops the activations at the
// lease's end, before the others may take them over
// (TestLeaveDuringPartitionFencesAtLease).
//
// A behaviour that is running when the fence fires cannot be
// interrupted: it runs to its end, and nothing is delivered to its actor
// after it. So, for a member cut off from the server, at most one
// activation per id holds only if every behaviour that started before its
// fence returns within the lease's margin (TTL/5 after the fence, less the
// fence timer's lateness); one that runs longer may still run when
// another member activates the id. TestFenceRefusesQueuedRequests checks
// the first part: a behaviour that returns at the fence, a long request
// queued behind it refused, and the survivor's activation after the end
// of the fenced one. Keep behaviours short against TTL/5, or run long
// work outside them (actor.Go).
// The last fifth of the TTL is the margin for the fence timer to run late
// and for the member's and the server's clocks to run at different rates;
// a process stopped for longer than that (a SIGSTOP, a long VM pause) may
// run its activations past its lease, until it wakes and its timer fires.
// A refresh may take up to 4/5 of a TTL: choose a TTL well above the
// server's worst key-value latency under load, or members fence
// themselves (safe, but their entities are unavailable until they join
// again). The tests use TTLs of 1 to 5 seconds on a 2-core machine.
//
// # Virtual entities
//
// The bucket <name>_activations has one key per active entity,
// <kind>.<base64url(id)>, whose value names the owning member and its
// incarnation. An entity is activated on a member by compare-and-set on
// that key: Create when it has none; Update with the last revision when it
// names an incarnation that is not a live member (read from the members'
// bucket itself, not from the view: a takeover, counted) or this member's
// own incarnation (an activation that ended without releasing its key),
// or names no valid member at all (a malformed record, counted in
// actord_cluster_malformed_total only, not as a takeover:
// TestMalformedActivationRecordTakenOver).
// The claimant then spawns the actor, exports it under a name of its own
// on its remote.Node, and registers it under its lease: if the lease was
// fenced during the claim, the activation is undone (ErrFenced).
//
// Get reads the key (unless it knows a route, see "Limits"): if its owner
// is live in this member's view, it returns a port to it. Otherwise it chooses the member by rendezvous
// hashing (the highest hash of member, kind and id among the live members
// hosting the kind, in this member's view) and asks it to activate the
// entity, with a core NATS request on <name>.cluster.<member>.activate; it
// activates it locally if it chose itself. The chosen member claims the
// key, or answers with the live member that already holds it. Concurrent
// Gets of one id, from any members, end at the one activation: on one
// member they share one claim, across members the compare-and-set lets one
// win and the others find it (TestManyEntitiesExactlyOnce activates 2,000
// entities from 4 members at once, each activated once, as counted by the
// entities; ACTORD_CLUSTER_ENTITIES=10000 for more). A Get right after an
// activation finds it from any member: the key is written before the
// activation answers (TestLookupRightAfterActivation).
//
// An activation ends as any actor ends: by a status, a pill, a panic past
// its supervision, its system's stop, or idle passivation
// (actor.WithPassivation among Host's options). Its member then unexports
// it and deletes its key with compare-and-set on its revision, so that the
// next Get activates it again, possibly elsewhere
// (TestPassivationReleasesKey).
//
// The revision fence: each member watches the activations' bucket (keys
// and revisions only) and stops at once a local activation whose key got a
// revision above the one it claimed: another member took it over. This is
// what ends an activation that outlived its lease when it sees the server
// again (TestFenceOnTakeover writes the key by hand, as a rival would).
// That watch is restarted when the connection has reconnected, reading
// every key afresh (TestWatchesRecoverAfterReconnect fails without it).
//
// # Rebalancing
//
// When a member joins, the entities that rendezvous hashing now puts on it
// move there, gradually and only when idle; the others stay where they
// are. Each member's rebalancer looks at its activations every
// Rebalance.Every (WithRebalance; default TTL/4, and at once when a member
// joins if the last look is that old). An activation that has been
// delivered no request for Rebalance.Idle (default 30s, as the looks see
// it) and whose placement, in this member's view, is another live member
// hosting the kind gets a move check, at most Rebalance.Batch (default 32)
// per look and member. Host puts a gate in front of the behaviour that
// counts the requests delivered; the check is a message to the actor, so
// it runs in the actor's own turn, after every request queued before it:
// if none was delivered since the look and the entity is not Busy (an
// optional method; one found Busy is checked again only after a request
// was delivered to it since, so that the checks, which
// actor.WithPassivation counts as activity, do not keep it from
// passivating: TestBusyEntityPlacedElsewherePassivates), it shuts the gate, unexports the activation and sends
// it actor.FinishedMsg. Its end releases its key (after the Stopped hook),
// and the next Get finds no key and activates the entity where placement
// says, on demand: a move activates nothing by itself, and moves no state.
// A Get that finds the moving activation still ending waits for its end
// and looks again instead of activating it there.
//
// A request that reaches the shut gate is refused undelivered with
// ErrMoved, one that reaches the unexported name with
// remote.ErrUnknownName: Kind.Ask asks again in both cases (through a port
// that Get returned, ErrMoved comes as is from a local port, and from a
// remote one as a failure wrapping remote.ErrNotDelivered and
// remote.ErrRemote with ErrMoved's text), and reaches the new
// activation (TestAskQueuedBehindMoveCheck queues a remote and a local
// ask behind the check). For one TTL after a move, the member it left
// answers a claim of the id by "look again" while placement, in its view,
// puts the id elsewhere: a Get that read the key just before its release
// goes on to the new member. A member whose view lags (it has not seen
// the joining member yet) and asks the member it left is told to look
// again too, for that TTL; a longer lag activates the id there again, and
// it moves again once idle. There are never two activations of an id,
// and a request is delivered to one activation at most:
// TestAsksRacingMoves asks random entities from every member while a
// member joins and entities move (its asks seldom meet a shut gate:
// TestAskQueuedBehindMoveCheck makes them), and the entities count each
// request's deliveries and their own activations. TestJoinMovesIdleEntities: of 240
// entities on two members, the 84 that hash to a third one move to it
// once it joins, the 80 idle ones 0.64s to 0.78s after the join in 12
// runs under the race detector (Idle 300ms, Batch 6, Every 100ms: at
// least seven looks of two members), never faster than Batch per look; 4
// that get an ask every 30ms stay until their traffic stops, then move;
// the other 156 are never activated again. WithRebalance(Rebalance{Off:
// true}) leaves activations where they are until they end
// (TestJoinKeepsActivationsWithRebalanceOff).
//
// # What is guaranteed
//
// At most one activation per id at any time, across members, restarts of
// the server and partitions that heal, under these conditions: takeovers
// read the members' bucket and write with compare-and-set, both decided
// by the stream's leader (with one server, as tested; with a replicated
// bucket, direct gets served by a lagging replica are not covered by the
// tests), a member's fence timer fires within TTL/5 of its deadline, and,
// on a member cut off from the server, every behaviour running at the
// fence returns within that margin (see "Leases and the fence"). The tests check it with counters kept by
// the entities themselves, through an abrupt stop
// (TestFailoverAbruptStop), a silent partition of one member that heals
// (TestPartitionHeal: its bytes held, then delivered late), a server
// restart longer than the TTL (TestNATSServerRestart), a takeover
// (TestFenceOnTakeover) and moves (see "Rebalancing"); and across OS
// processes: TestProcessesKill runs three members as separate processes
// (the test binary run again) against one nats-server, with traffic from
// all three, kills one with SIGKILL while two requests are kept in flight
// on its entities, and checks from the activations that the processes
// report on their stdout (start and stop, with the machine's clock) that
// no id has two at once and the others' entities are activated once.
//
// During a partition, a member cut off from the server fences its
// activations within 4/5 of a TTL, and its entities can be activated
// elsewhere only after its key expired (one TTL or more): availability of
// those ids is lost for about one TTL, never safety. An id whose key cannot
// be read or written (the server or its JetStream unreachable) cannot be
// activated anywhere: Get fails with ErrKV or its context's error, and on
// a member whose lease lapsed, with ErrNotJoined until it joins again.
//
// Failover time: an entity of a member that dies is reachable again on
// another member one TTL after the dead member's last refresh (so between
// 3/4 of a TTL and one TTL after its death), plus the server's expiry
// timer, plus the time for the others' views to drop it (the expiry's
// marker reaches their watches at once) and one activation: 2.0s after
// the kill for the last of 113 entities with a 2s TTL, in one run of
// TestFailoverAbruptStop on a 2-core machine; with separate processes and
// SIGKILL (TestProcessesKill, 2s TTL, under the race detector on 2 cores),
// the last of the killed member's 21 entities answered elsewhere 1.88s to
// 2.28s after the kill in 16 runs, and every ask in flight to it (the two
// kept requests and one per asking goroutine) failed with ErrOwnerLost
// and succeeded when asked again. Failover
// is on demand: the next Get of the id activates it; nothing is activated
// proactively, and the entity's state is what its factory makes (the
// cluster moves no state).
//
// Delivery is at most once, as in package remote: a request is delivered
// to one activation or to none. Kind.Ask retries only requests refused
// before delivery: remote.ErrUnknownName (the activation had ended),
// ErrMoved and ErrFenced from the gate, and actor.ErrTerminated for a
// request that the gate had not delivered (the actor ended with it
// queued: TestAskRacingEndOfActivation), at most 16 times per Ask. The
// gate marks each request it delivers, local or remote: the member that
// holds an activation tells a remote asker that a request the gate had
// not delivered was not delivered (remote.ErrNotDelivered, see
// remote.OnServe), and the asker's Kind.Ask asks again; one the gate
// delivered and whose activation then ended without answering it fails
// with actor.ErrTerminated, which Kind.Ask returns (the behaviour may have
// acted on it). Kind.Ask tells a refusal by the gate's mark, never by the
// error alone: a behaviour that fails a delivered request with an error
// wrapping ErrMoved or ErrFenced (a relayed downstream failure) gets it
// back once, not asked again (TestAskDoesNotResendDeliveredRequestFailedWithErrMoved);
// from a remote member only remote.ErrNotDelivered counts, not the error's
// text. A member of an older build holding the activation sends
// actor.ErrTerminated or a refusal's text alone, which Kind.Ask returns. An
// ask in flight to a member that leaves or dies fails with an error
// wrapping ErrOwnerLost as soon as the member is out of this member's view
// (TestAskInFlightToDeadNode: within about one TTL), or at once when NATS
// has no subscriber for it; the request may have been processed. Asking again
// reaches the next activation. Give asks a deadline.
//
// # Singletons
//
// RunSingleton makes a member a candidate for a named singleton: the
// bucket <name>_singletons (maximum age one TTL) holds one key per
// singleton; the candidate that creates it runs the actor and refreshes
// the key every TTL/4; the others try to create it every TTL/4 and take
// over when it has expired (one TTL after the holder's last refresh:
// TestSingletonFailover). The holder stops its actor by the same fence
// as activations, 4/5 of a TTL after its last successful refresh was sent,
// so two instances do not run at once under the same conditions (a
// behaviour running at the fence included). Leave stops the actor and
// keeps the key fresh until it has ended, bounded by Leave's context,
// then deletes it (TestSingletonLeaveWaitsForItsActor); a member whose
// actor the fence stopped does not take the key again before that actor
// ended, then takes it back by its revision if nobody wrote it since, and
// at Leave deletes it likewise, a refresh that raced the fence included
// (TestSingletonRefreshRacingFenceKeepsKey). A
// singleton's actor is reached as the program arranges (for instance an
// export on its member's remote.Node); the cluster does not route to it.
//
// # Security
//
// The cluster uses the remote.Node's NATS connection: the members need
// permission to use the JetStream API for the three buckets, to publish
// to and subscribe to <name>.cluster.>, and remote's own subjects. Any
// client that may publish to <name>.cluster.<member>.activate can make
// that member activate entities of the kinds it hosts (the member checks
// the kind and id as Get does, and refuses others, counted in
// actord_cluster_malformed_total), and any client that
// may write the buckets can take members' places or activations: give
// those permissions to members only.
//
// # Metrics
//
// WithRegisterer registers, per member: actord_cluster_members (the view's
// size), actord_cluster_activations (running here),
// actord_cluster_takeovers_total (keys taken over from members no longer
// live), actord_cluster_moves_total (idle activations ended to move them,
// see "Rebalancing"), actord_cluster_moved_refusals_total (requests
// refused with ErrMoved), actord_cluster_fenced_activations_total,
// actord_cluster_activation_duration_seconds (a histogram of claims that
// activated here), actord_cluster_kv_errors_total,
// actord_cluster_lease_refresh_failures_total,
// actord_cluster_lease_lapses_total, actord_cluster_singletons_held and
// actord_cluster_malformed_total (activation requests with a bad kind or
// id, refused, and activation records that name no valid member,
// taken over).
// The Grafana dashboard cluster/dashboards/cluster.json has a row of
// panels over them, per instance (TestDashboardNamesExportedMetrics checks
// that it names only these metrics).
//
// # Limits
//
// Kinds are defined and hosted before Join. Rebalancing knows only the
// requests that reach the gate: an entity that keeps a request to answer
// later, for longer than Rebalance.Idle, should say it is Busy meanwhile,
// or a move ends it and the kept request fails with actor.ErrTerminated. A
// request that reaches the activation after the move's actor.FinishedMsg
// (sent through a port that Get returned before the move, or read by the
// member's node just before the unexport) fails undelivered with
// actor.ErrTerminated, as after a passivation: a window of a few
// instructions; Kind.Ask sends such a request again, through a local port
// or a remote one (see "What is guaranteed"), at most 16 times per Ask.
// Each member watches the whole activations' bucket, so each activation's
// claim and release reach every member: the registry's traffic grows with
// activations times members. Get keeps the routes it found to remote
// activations (at most 65,536 per kind, then it starts afresh), used while
// their member keeps the same incarnation in the view; otherwise it reads
// the key (one round trip to the server). A route made stale by a
// passivation costs one refused ask, which Ask retries with a fresh Get
// (BenchmarkAsk compares Kind.Ask with an ask through a port Get returned,
// and with a raw NATS request). Entity ids are at most 512 bytes and not
// empty. The activation request's subjects are not those of package
// remote's security model (see "Security").
//
// # Concurrency
//
// A Cluster, its Kinds and Singletons are safe for concurrent use. Get and
// Ask wait for round trips to the server: from a behaviour they return
// actor.ErrAskInBehaviour at once; call them from goroutines, or from
// behaviours through actor.Go.
package cluster
