package goid

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestGetStableAndDistinct(t *testing.T) {
	if !Supported {
		if Get() != 0 {
			t.Fatal("Get must return 0 when Supported is false")
		}
		t.Skip("goroutine identity not supported here (architecture or ACTORD_GOID)")
	}
	self := Get()
	if self == 0 {
		t.Fatal("Get returned 0 although Supported is true")
	}
	for i := 0; i < 1000; i++ {
		if Get() != self {
			t.Fatal("identity changed within one goroutine")
		}
	}
	// Live goroutines have pairwise distinct identities, and each keeps its
	// identity across blocking (which may move it to another thread).
	const n = 64
	ids := make([]uintptr, n)
	var ready, release sync.WaitGroup
	ready.Add(n)
	release.Add(1)
	var done sync.WaitGroup
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			ids[i] = Get()
			ready.Done()
			release.Wait()
			if Get() != ids[i] {
				t.Error("identity changed after blocking")
			}
		}()
	}
	ready.Wait()
	seen := map[uintptr]bool{self: true}
	for _, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("identity %#x is zero or shared by two live goroutines", id)
		}
		seen[id] = true
	}
	release.Done()
	done.Wait()
}

// The architecture's assembly passes the check that initialization runs.
func TestSelfCheckPassesRealIdentity(t *testing.T) {
	if !archSupported {
		t.Skip("no assembly identity on this architecture")
	}
	for range 100 {
		if err := selfCheck(getg); err != nil {
			t.Fatal(err)
		}
	}
}

// Broken identity functions are each detected.
func TestSelfCheckDetectsBrokenIdentity(t *testing.T) {
	var counter atomic.Uintptr // fresh: each call returns a new value; no ordering needed
	for _, c := range []struct {
		name string
		get  func() uintptr
	}{
		{"zero", func() uintptr { return 0 }},
		{"constant", func() uintptr { return 0x1000 }},
		{"fresh", func() uintptr { return counter.Add(8) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := selfCheck(c.get)
			if err == nil {
				t.Fatalf("selfCheck accepted a %s identity function", c.name)
			}
			t.Log(err)
		})
	}
}

// setup chooses the fallback for unsupported architectures, ACTORD_GOID=portable
// and a failed check, and warns exactly once, only for a failed check.
func TestSetup(t *testing.T) {
	good := func() uintptr { return uintptr(Slow()) } // a correct (slow) identity
	bad := func() uintptr { return 0x1000 }
	for _, c := range []struct {
		name   string
		archOK bool
		env    string
		get    func() uintptr
		want   bool
		warns  int
	}{
		{"supported", true, "", good, true, 0},
		{"other value ignored", true, "fast", good, true, 0},
		{"unsupported arch", false, "", good, false, 0},
		{"portable", true, EnvPortable, good, false, 0},
		{"portable skips check", true, EnvPortable, bad, false, 0},
		{"check fails", true, "", bad, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var msgs []string
			warn := func(msg string, _ ...any) { msgs = append(msgs, msg) }
			if got := setup(c.archOK, c.env, c.get, warn); got != c.want {
				t.Errorf("setup = %v, want %v", got, c.want)
			}
			if len(msgs) != c.warns {
				t.Fatalf("%d warnings, want %d: %q", len(msgs), c.warns, msgs)
			}
			for _, m := range msgs {
				if !strings.HasPrefix(m, "actord: goroutine identity") {
					t.Errorf("warning %q lacks the package prefix", m)
				}
			}
		})
	}
}

const childEnv = "ACTORD_GOID_TEST_CHILD"

// A test binary started with ACTORD_GOID=portable runs on the fallback.
func TestPortableEnv(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortableChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), EnvVar+"="+EnvPortable, childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestPortableChild") {
		t.Fatalf("child did not run the check:\n%s", out)
	}
	if strings.Contains(string(out), "actord: goroutine identity") {
		t.Fatalf("ACTORD_GOID=portable must not log a warning:\n%s", out)
	}
}

// TestPortableChild runs only in the subprocess started by TestPortableEnv.
func TestPortableChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as TestPortableEnv's child")
	}
	if Supported {
		t.Fatal("Supported is true with ACTORD_GOID=portable")
	}
	if g := Get(); g != 0 {
		t.Fatalf("Get = %#x, want 0", g)
	}
	got := make(chan uintptr)
	go func() { got <- Get() }()
	if g := <-got; g != 0 {
		t.Fatalf("Get in another goroutine = %#x, want 0", g)
	}
}

func BenchmarkGet(b *testing.B) {
	var s uintptr
	for i := 0; i < b.N; i++ {
		s += Get()
	}
	_ = s
}
