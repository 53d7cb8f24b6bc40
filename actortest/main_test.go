package actortest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after the tests, that no goroutine outlives the systems
// the tests (and the kit) start and stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
