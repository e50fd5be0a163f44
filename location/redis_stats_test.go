package location_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// Stats().Errors counts operations Redis did not answer (here: the server
// is gone), not the store's own refusals.
func TestRedisStats_CountsErrorsNotRefusals(t *testing.T) {
	srv := locationtest.StartRedis(t)
	s := newRedisStore(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := s.GetDescriptor(ctx, "m", "nobody"); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("GetDescriptor of nobody: %v", err)
	}
	if _, err := s.SpotRecord(ctx, "m", "bad:kind", "x"); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("SpotRecord of a bad kind: %v", err)
	}
	if st := s.Stats(); st.Errors != 0 {
		t.Fatalf("refusals counted as errors: %+v", st)
	}
	srv.Stop()
	for i := 1; i <= 2; i++ {
		octx, ocancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := s.GetDescriptor(octx, "m", "n")
		ocancel()
		if err == nil || errors.Is(err, location.ErrNotFound) {
			t.Fatalf("GetDescriptor with the server gone: %v", err)
		}
		if st := s.Stats(); st.Errors != uint64(i) {
			t.Fatalf("after %d failed reads: %+v", i, st)
		}
	}
}
