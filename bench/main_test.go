package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after the tests, that no goroutine outlives the systems
// the benchmark programs start and stop. Only this process is checked: the
// soak scenarios of TestBoundedMailboxSoak run in child processes of this
// binary, which run this TestMain too and so check themselves.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
