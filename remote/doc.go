// Package remote lets actors of different processes talk over NATS: a node
// exports local ports under names, other nodes import them as typed remote
// ports and send to them, or ask them, with the same call shapes as local
// ports.
//
// # Nodes, exports, imports
//
// A Node is one actor system's presence on NATS: Connect gives it a name,
// one NATS connection and one subscription on its own subjects
// ("actord.<name>.>", see "Security"). Messages for all of the node's
// actors go to those subjects; the name they were exported under travels
// in each message's header, inside the payload.
//
//	// Node "shop" (process 1): export a local port.
//	node, err := remote.Connect(sys, "nats://127.0.0.1:4222", "shop")
//	orders, _ := actor.Bind(desk, (*Desk).OnOrder)
//	err = remote.Export(node, "orders", orders, remote.CBOR[*Order]())
//
//	// Node "web" (process 2): import it and send.
//	node, err := remote.Connect(sys, "nats://127.0.0.1:4222", "web")
//	orders, err := remote.Import(node, "shop", "orders", remote.CBOR[*Order]())
//	err = orders.Send(&Order{Item: "tea", Qty: 2})
//
// A request port (its message type embeds actor.Request[R]) is exported
// with ExportRequest and imported with ImportRequest; its Ask waits for the
// typed reply or for the context:
//
//	price, err := prices.Ask(ctx, &Quote{Item: "tea"}) // price is an R
//
// On the exporting node the request reaches the actor as by actor.AskFunc
// with the time left to the asker's context as its timeout; the behaviour
// answers with m.Reply as for a local ask, and the reply is encoded and
// published back to the asking node from within that call (no actor or
// goroutine per request).
//
// Code that should not care where an actor lives takes a Sender[M] (both
// actor.Port[M] and *Port[M] are Senders) or an Asker[Req, R] (*RequestPort
// is one; Local adapts a local port). Forward turns a remote port into a
// local actor.Port, for timers, AskAsync replies and actors that only know
// local ports.
//
// # Types and codecs
//
// A Codec encodes one type. JSON and CBOR encode plain structs (their
// exported fields: Export and Import refuse a type with an unexported
// field, ErrUnencodable, rather than have it arrive empty), Proto
// encodes message types that embed a generated protobuf message (a schema
// shared by both ends). The embedded actor.Message and actor.Request carry
// no data and are never encoded. Both ends of a port must use the same
// codec.
//
// Each message carries the exported name and a 32-bit hash of its type's
// name: the Go type's name without package path ("Order" for *shop.Order),
// so two programs may declare the message type in different packages, or,
// with Proto, the protobuf message's full name ("shop.v1.Order"), whatever
// the Go type that embeds it. A node delivers only to
// names it exported, and only messages whose type hash matches the export:
// a message for another name or of another type is refused and counted
// (Stats.UnknownName, Stats.WrongType); an ask so refused fails with
// ErrUnknownName or ErrWrongType.
//
// A message that fails to encode is an error to the sender (ErrEncode,
// wrapping the codec's error), and nothing is sent. A payload that fails to
// decode on the receiving node is a dead letter: counted
// (Stats.DecodeErrors), logged, never delivered and never a crash; an ask so
// dropped fails with ErrDecode. A payload that decodes to a nil message
// (JSON or CBOR null) fails to decode, and so does one on which a codec's
// Decode panics (the panic is recovered). A decoded message that the local
// port refuses (its actor terminated) is counted in Stats.DeadLetters.
//
// # Delivery
//
// Delivery is at most once, as core NATS is: nothing is stored or
// retransmitted. A nil error from Send means the message was handed to this
// node's NATS connection, not that it arrived.
//
// Ordering: messages sent from one node to another, through any of its
// ports, arrive in the order of their Sends and Asks (one connection per
// node, one publisher at a time per destination, one subscription per node),
// and are delivered to the local ports in that order; so per-sender FIFO
// holds as for local sends. Messages from different nodes are not ordered
// with each other.
//
// A node that is down, restarting or not started has no subscription on the
// NATS server. The server then answers "no responders" to the sending node,
// which marks the destination down: its pending asks fail with
// ErrNoResponders, and later Sends and Asks to it fail at once with
// ErrNoResponders instead of being published. While it is down, a node
// that has ports imported from it is probed (after WithProbeInterval,
// default 250ms, then at doubling intervals up to 8 times that); when it
// answers, or sends anything, sends to it resume.
// The messages sent before the "no responders" came back (about one round
// trip to the server) are lost without error: core NATS gives a one-way
// publish no other signal. Use an ask where the sender must know.
//
// Loss is counted where it can be detected: each node numbers the messages
// (sends and requests) it sends to each other node, every frame carries
// the number of its first one, and the receiver counts the numbers it
// never got, at the next frame that arrives (Stats.LostMessages, logged).
// That covers a NATS server restart (a node that reconnects first
// publishes what it buffered meanwhile, and nobody has subscribed yet), a
// node that the server cut off as a slow consumer (what the server held
// for it is dropped; the node counts the disconnection, Stats.Disconnects,
// and logs it), frames NATS refused to publish and frames the receiving
// client dropped (Stats.Dropped). It does not cover the messages sent to a
// node that was not running (it cannot count what it never saw; the sender
// found it down), nor the last messages before a link falls silent for
// good (no later frame shows the gap), nor answers (an ask whose answer
// is lost ends with its context).
//
// A node that is up but slow never slows senders: its NATS subscription
// hands messages to the actors' mailboxes, which do not block; asks to a
// busy actor end with their context (ctx.Err()), and a reply after that is
// counted (Stats.LateReplies) and dropped. If the receiving node itself
// falls behind (its subscription's pending limits, WithPendingLimits, are
// exceeded), the NATS client drops frames, and the node counts them
// (Stats.Dropped): at most once, again.
//
// Asks time out by their context: Ask returns ctx.Err() when ctx ends
// first, or, when the serving node's timeout (the time left to ctx, sent
// with the request) answers first, context.DeadlineExceeded wrapped with
// ErrRemote; both count in Stats.AsksTimedOut. Otherwise an ask ends with the reply, with the remote actor's
// termination (actor.ErrTerminated), with "no responders" for its node, or
// with Close.
//
// An ask that fails with an error wrapping ErrNotDelivered was not
// delivered to any behaviour on the remote node, and may be asked again:
// the remote actor was gone when the request came (it then wraps
// actor.ErrTerminated too), or the serving side says so: an error that
// the request was failed with there that wraps ErrNotDelivered (a refusal,
// with its text), or an OnServe function of the export that knows its
// behaviour never received a request its actor's end dropped from the
// queue. Without that, actor.ErrTerminated alone does not say whether the
// request was delivered: the executor fails a request dropped from the
// queue at its actor's end and one whose behaviour ended the actor
// without answering it alike. Each travels as its own failure code; a
// node of an older build, which does not know those codes, reads them as
// ErrRemote with the error's text. A node that dies after receiving a request sends nothing back,
// and nothing tells the asker: give asks a deadline. Only the node asked can
// answer an ask (see "Security"); an answer for an ask that gave up is
// counted as late and dropped. A node restarted under the same name takes
// no answer meant for its previous incarnation: its reply subjects and ask
// ids are new and random.
//
// After Close, Send, Ask and Flush return ErrClosed. If the NATS connection
// closes for good without Close (the server gone, and reconnection off,
// nats.NoReconnect, or given up), the node notices from the connection's
// closed handler: it fails its pending asks, and later Sends, Asks and
// Flushes at once, with an error wrapping both ErrClosed and
// nats.ErrConnectionClosed; call Close to release the rest. A closed handler
// set with WithNATS and nats.ClosedHandler is still called, after the
// node's.
//
// Size: one encoded message, with its header, must fit in one NATS message
// (the server's max_payload, 1 MiB by default); a larger one fails with
// ErrTooLarge.
//
// # Batching
//
// One-way sends are batched: records for one destination are appended to a
// frame that a flusher goroutine (one per node imported from) publishes;
// while it publishes, later sends fill the next frame, so a busy link
// carries many messages per NATS message (up to 64 KiB) and an idle one
// publishes each message at once. Node.Flush publishes every message sent
// before it, waiting for another goroutine that is publishing to the same
// node if need be, then waits for the server's acknowledgement (a context
// without deadline gets one of a minute); Close does the same before it
// closes the connection.
// Asks are published by the caller's goroutine when nobody is publishing
// to that node, so that they wait for no goroutine switch; answers
// (replies, failures, pongs) are not batched: each is published in a frame
// of its own to the reply subject of the frame that asked (see
// "Security"), by the goroutine that answers. A reply is published from
// the worker running the replying behaviour (inside its
// Reply call), or from the timer goroutine that times the request out:
// nats.go copies it into the connection's write buffer and wakes its
// flusher goroutine. That worker waits for the network only when the
// buffer reaches nats.WriteBufferSize (32 KiB by default): nats.go then
// writes it to the socket from the publishing goroutine, which waits if
// the kernel's socket buffer is full (at most nats.FlusherTimeout). While
// the connection reconnects, frames fill its reconnect buffer
// (nats.ReconnectBufSize) and past it fail at once, counted in
// Stats.PublishErrors: such a reply is lost and its ask ends with its
// context.
//
// # Security
//
// A node uses the NATS connection as configured by WithNATS: credentials,
// NKeys, TLS and authorization are NATS's (nats.UserCredentials,
// nats.Secure, nats.RootCAs...), not re-implemented here. What a node
// believes about who sent a message comes only from what the NATS server
// vouches for, the subject it was published to, and so from the server's
// subject permissions. This is the one place that describes it.
//
// Subjects, with the default prefix "actord" (WithSubjectPrefix):
//
//	actord.<to>.<from>          a frame of sends, requests and pings from node <from> to node <to>
//	actord.<from>.<to>.<token>  its reply subject: <to>'s replies, failures and pongs,
//	                            and the server's "no responders" for <to>
//
// Node <to> takes the sender from the subject (the frame's own sender
// field must agree), answers only on the reply subject of the frame that
// asked, and only if that subject is "actord.<from>.<to>.<token>". Node
// <from> makes the token at random (128 bits) for node <to> alone, and
// takes an answer, a pong or a "no responders" status only on its reply
// subject for <to> with that token, and an answer only to an ask that it
// sent to <to> and that is still waiting (ask ids are random 64-bit
// numbers). Anything else is refused, counted (Stats.DecodeErrors or
// Stats.LateReplies) and logged, never a crash.
//
// With every node's user given these permissions (nats-server
// configuration; with NATS accounts and JWTs, the same subjects):
//
//	authorization {
//	  users = [
//	    {user: shop, password: $SHOP_PASS, permissions: {
//	      publish:   ["actord.*.shop", "actord.*.shop.*"]
//	      subscribe: ["actord.shop.>"]
//	    }}
//	    # ... one such user per node name
//	  ]
//	}
//
// a client connected as node shop:
//
//   - can send to any node's exported ports, and ask them, as shop, and
//     nobody else can: node web delivers a message as from shop only if it
//     was published to actord.web.shop;
//   - can answer only the asks sent to shop: answers for other nodes' asks
//     go to subjects it may not publish to, with tokens and ids it never
//     saw; a request that names a third node as its sender, or a reply
//     subject of a third node, is refused, so it cannot have another node
//     answer an ask in its place (a confused deputy);
//   - can make up a "no responders" status only for itself (the node it
//     asked then takes shop as down until shop answers a probe), and gaps
//     in sequence numbers only in its own messages
//     (Stats.LostMessages);
//   - cannot read other nodes' traffic: it subscribes only to actord.shop.>;
//   - cannot take the name of another node, and cannot subscribe as a
//     second node shop unless it holds shop's credentials (Connect refuses
//     a name already connected, ErrNameInUse, but two processes holding the
//     same credentials can still race for it).
//
// Without subscribe permissions, any client can read every frame, and with
// the tokens and ids it reads, answer asks it can publish answers for.
// Without publish permissions, any client can publish to
// actord.<node>.<name> and so send to and ask the node's exported ports as
// any node <name>; it still cannot answer other nodes' asks or fail them
// (tokens and ids are unguessable to a client that cannot read them). Give
// both. A node trusts the nodes that may publish to it only so far: every
// message is decoded by the export's codec, a request's payload and text
// are bounded by the server's max_payload, and a node delivers only to
// what it exported.
//
// Whatever a NATS client publishes to a node's subjects, malformed frames
// included, is refused and counted, never a crash. The node keeps a peer
// (the state of the link to another node) for each node it imported from,
// and for each node that sent it anything: those cost no goroutine, and
// at most 1024 of them are kept (a new one then replaces another), so that
// senders under ever new names cannot grow the node without bound. A
// request's timeout from the wire saturates at the largest time.Duration.
//
// # Observability
//
// Node.Stats returns the node's counters; package remotemetrics exports
// them to Prometheus.
//
// # Concurrency
//
// A Node and its ports are safe for concurrent use by any goroutines,
// behaviours included, except RequestPort.Ask: from a behaviour it returns
// actor.ErrAskInBehaviour at once rather than block the worker for a round
// trip (ask from goroutines, or from behaviours through actor.Go).
// Incoming messages are delivered by the node's subscription goroutine with
// ordinary port sends; requests with actor.AskFunc, whose completion
// publishes the reply.
package remote
