package remote

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Errors returned by this package; test them with errors.Is. Errors that
// come from the remote node (ErrUnknownName, ErrWrongType, ErrDecode and the
// actor's errors) wrap ErrRemote as well, and an actor's sentinels
// (actor.ErrTerminated, actor.ErrStopped) and context.DeadlineExceeded keep
// their identity across the wire.
var (
	// ErrClosed: the node has been closed, or its NATS connection was
	// closed for good without Close (the server went away, reconnection
	// off or exhausted): the error then also wraps nats.ErrConnectionClosed.
	ErrClosed = errors.New("remote: node closed")
	// ErrNoResponders: the destination node has no subscription on the NATS
	// server: it is down, restarting, or was never started. Asks in flight
	// to it fail with this error, and sends to it fail with it at once until
	// the node answers a probe again.
	ErrNoResponders = errors.New("remote: no responders for the node")
	// ErrTooLarge: the encoded message does not fit in one NATS message
	// (the server's max_payload less the framing).
	ErrTooLarge = errors.New("remote: encoded message too large")
	// ErrEncode: the codec failed to encode the message (or, for an ask,
	// the remote codec failed to encode the reply); the error wraps the
	// codec's error.
	ErrEncode = errors.New("remote: encode failed")
	// ErrDecode: a payload could not be decoded (a request on the remote
	// node, or a reply here).
	ErrDecode = errors.New("remote: decode failed")
	// ErrUnknownName: the remote node exports no port under that name.
	ErrUnknownName = errors.New("remote: name not exported")
	// ErrWrongType: the remote port under that name takes another message
	// type, or is not a request port.
	ErrWrongType = errors.New("remote: name exported with another message type")
	// ErrNameTaken: Export of a name this node already exports.
	ErrNameTaken = errors.New("remote: name already exported")
	// ErrNotDelivered: the remote node failed the request before any
	// behaviour received it, so it had no effect there and may be asked
	// again: the actor was gone, or ended with the request still queued
	// (the error then wraps actor.ErrTerminated too), or the serving side
	// refused it undelivered (see OnServe). Errors that a request failed
	// with on the serving node that wrap ErrNotDelivered reach the asker
	// wrapping it, with their text.
	ErrNotDelivered = errors.New("remote: request not delivered")
	// ErrRemote is wrapped by every error that the remote node reported.
	ErrRemote = errors.New("remote: error on the remote node")
	// ErrBadName: a node name that is not a single NATS subject token of
	// at most 255 bytes.
	ErrBadName = errors.New("remote: invalid node name")
)

// errConnClosed is returned by Send, Ask and Flush, and ends the asks
// pending, once the node's NATS connection has closed without Close.
var errConnClosed = fmt.Errorf("%w: %w", ErrClosed, nats.ErrConnectionClosed)

// ErrNameInUse: Connect found a node of that name (and subject prefix)
// connected already: it answered a ping on the name's subject.
var ErrNameInUse = errors.New("remote: a node with this name is connected")

// ErrUnencodable: Export or Import of a JSON or CBOR codec for a type that
// has fields the codec would silently leave out (unexported ones); the
// error names the field.
var ErrUnencodable = errors.New("remote: type has fields its codec does not encode")
