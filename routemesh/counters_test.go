package routemesh

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// Every terminal result is counted under its name, the Spot codes and
// the results no wire code carries included; an error of no row counts
// as a handler error, a code no row has as "other".
func TestCounters_CoverEveryResult(t *testing.T) {
	var c counters
	for _, r := range zerr.Table {
		c.result(fmt.Errorf("call: %w", r.Err))
		if r.Code != 0 {
			c.result(wire.ErrorOf(wire.Code(r.Code), "remote"))
		}
	}
	c.result(errors.New("plain"))
	c.result(&wire.RemoteError{Code: 999})
	m := c.snapshot()
	for _, r := range zerr.Table {
		want := uint64(1)
		if r.Code != 0 {
			want = 2
		}
		if r.Err == zerr.ErrHandler {
			want++ // the plain error
		}
		if got := m["errors_"+r.Name]; got != want {
			t.Errorf("errors_%s = %d, want %d", r.Name, got, want)
		}
	}
	if m["errors_other"] != 1 {
		t.Errorf("errors_other = %d, want 1 (code 999)", m["errors_other"])
	}
}
