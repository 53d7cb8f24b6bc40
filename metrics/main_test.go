package metrics

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after the tests, that no goroutine outlives the systems
// and collectors the tests start and stop. (One TestMain serves both this
// package's tests and package metrics_test's: they share a test binary.)
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
