package dashboards

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after the tests, that no goroutine outlives the systems
// the tests run to gather the metrics actord exports.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
