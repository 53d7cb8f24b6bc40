package remote

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"reflect"
	"time"
)

// The wire format. Every NATS message between nodes is a frame:
//
//	frame   = version(1 byte) sender(string) [seq(uvarint)] record*
//
// seq, in data frames only (sends, requests and pings; not in answer
// frames), is the sequence number of the frame's first send or request:
// each node numbers the sends and requests it puts to each other node
// 0, 1, 2... (pings are not numbered), so that the receiver counts the
// messages missing between two frames (Stats.LostMessages).
//
// The sender field must name the node that the frame's subject names
// (see Node.onMsg): identity comes from the subject, which server
// permissions can vouch for, and the field only guards against
// misrouting.
//
//	string  = uvarint length, bytes
//	record  = kind(1 byte) body
//	send    = name(string) type(4 bytes) payload(string)
//	request = name(string) type(4 bytes) id(uvarint) timeout-µs(uvarint, 0: none; saturated, see wireTimeout) payload(string)
//	reply   = id(uvarint) payload(string)
//	failure = id(uvarint) code(1 byte) text(string)
//	ping, pong: no body
//
// Data frames (send, request, ping) go to the receiver's data subject,
// answer frames (reply, failure, pong) to the reply subject of the frame
// they answer. The record's name and type are its header: the NATS subject
// names only the nodes. NATS headers are not used for data frames (nats.go
// parses them into a map per message); the server's no-responders status,
// on a reply subject, is the only NATS header message a node reads.
const (
	wireVersion = 2

	kindSend    = 1
	kindRequest = 2
	kindReply   = 3
	kindFailure = 4
	kindPing    = 5
	kindPong    = 6
)

// Failure codes carried by failure records. A node that does not know a
// code (one older than the code) reads it as codeOther: ErrRemote with the
// record's text.
const (
	codeUnknownName = 1
	codeWrongType   = 2
	codeDecode      = 3
	codeEncode      = 4
	codeTerminated  = 5
	codeStopped     = 6
	codeDeadline    = 7
	codeOther       = 8
	// codeUndelivered: the request ended before any behaviour received
	// it: the actor was gone, or ended with the request queued (the
	// asker's error wraps actor.ErrTerminated and ErrNotDelivered).
	codeUndelivered = 9
	// codeRefused: the request was failed with an error that wraps
	// ErrNotDelivered (a refusal before delivery, by the serving side's
	// own code); the text is that error's.
	codeRefused = 10
)

var errMalformed = errors.New("remote: malformed frame")

// maxTimeoutMicros is the largest request timeout, in microseconds, that a
// time.Duration holds.
const maxTimeoutMicros = math.MaxInt64 / int64(time.Microsecond)

// wireTimeout converts a request record's timeout (microseconds, 0: none)
// to a time.Duration, saturating at the largest Duration: a larger value,
// which multiplied out would overflow (to a negative timeout, or a tiny
// positive one that fails the request at once), means "the largest
// timeout" (about 292 years).
func wireTimeout(us uint64) time.Duration {
	if us > uint64(maxTimeoutMicros) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(us) * time.Microsecond
}

// typeHash identifies a message type on the wire: the FNV-1a hash of the
// Go type's name without its package path, pointers dereferenced ("Add" for
// *pkg.Add), so that two programs that declare the same message type in
// different packages agree.
//
// A codec that has a TypeName() string method names the type itself: Proto
// gives the protobuf message's full name, so any Go type embedding that
// message matches.
func typeHash[M any](c Codec[M]) uint32 {
	var name string
	if tn, ok := c.(interface{ TypeName() string }); ok {
		name = tn.TypeName()
	} else {
		t := reflect.TypeFor[M]()
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		name = t.Name()
		if name == "" {
			name = t.String()
		}
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

func appendString(b []byte, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader parses a frame; after an error every read returns zero values and
// err stays set.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errMalformed
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errMalformed
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) u32() uint32 {
	if r.err != nil || len(r.b) < 4 {
		r.err = errMalformed
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errMalformed
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}
