package remote_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/remote"
)

type hidden struct {
	actor.Message
	Key   string
	value string //nolint:unused // the field the codecs would lose
}

type innerHidden struct{ n int }

type nestedHidden struct {
	actor.Message
	In []innerHidden
}

type hiddenReq struct {
	actor.Request[string]
	key string
}

type fine struct {
	actor.Message
	At   time.Time // unexported fields, but it marshals itself
	Tags map[string]int
	_    int
}

// JSON and CBOR encode exported fields only: a message type with an
// unexported field would arrive with it empty, with no error anywhere. Export
// and Import of such a type fail with ErrUnencodable naming the field;
// types that marshal themselves (time.Time), blank fields and the embedded
// actor.Message and actor.Request are fine.
func TestUnexportedFieldsRefused(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	n := connect(t, sys, url, "a")

	check := func(what string, err error, field string) {
		t.Helper()
		if !errors.Is(err, remote.ErrUnencodable) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want ErrUnencodable naming %q", what, err, field)
		}
	}
	_, err := remote.Import(n, "b", "x", remote.JSON[*hidden]())
	check("Import JSON[*hidden]", err, "value")
	_, err = remote.Import(n, "b", "x", remote.CBOR[*nestedHidden]())
	check("Import CBOR[*nestedHidden]", err, "In.n")
	_, err = remote.ImportRequest(n, "b", "x", remote.CBOR[*hiddenReq](), remote.CBOR[string]())
	check("ImportRequest CBOR[*hiddenReq]", err, "key")

	hp := actor.Port[*hidden]{}
	check("Export JSON[*hidden]", remote.Export(n, "h", hp, remote.JSON[*hidden]()), "value")
	fp := actor.Port[*fine]{}
	must(t, remote.Export(n, "f", fp, remote.CBOR[*fine]()))
	_, err = remote.Import(n, "b", "t", remote.CBOR[time.Time]())
	must(t, err)
	n.Close()
	stopSystem(t, sys)
}
