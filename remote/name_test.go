package remote_test

import (
	"errors"
	"testing"

	"github.com/actord/actord/remote"
)

// A second node under a name that a live node has is refused at Connect
// with ErrNameInUse: both used to connect, every send was delivered twice
// and asks went to whichever answered first. Once the first node is
// closed, the name is free again; another prefix is another name space.
func TestSecondNodeWithSameNameRefused(t *testing.T) {
	url := startNATS(t, 0)
	sys := startSystem(t)
	b := connect(t, sys, url, "b")
	b2, err := remote.Connect(sys, url, "b", remote.WithLogger(quiet))
	if !errors.Is(err, remote.ErrNameInUse) {
		if err == nil {
			b2.Close()
		}
		t.Fatalf("second Connect as b: %v, want ErrNameInUse", err)
	}
	if s := b.Stats(); s.DecodeErrors != 0 {
		t.Errorf("the live node counted %d decode errors for the check of its name, want 0", s.DecodeErrors)
	}
	other, err := remote.Connect(sys, url, "b", remote.WithLogger(quiet), remote.WithSubjectPrefix("other"))
	must(t, err)
	other.Close()
	b.Close()
	b3, err := remote.Connect(sys, url, "b", remote.WithLogger(quiet))
	must(t, err)
	b3.Close()
	stopSystem(t, sys)
}
