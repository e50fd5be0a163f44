package benchrun

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSpotsRedisBench_Quick runs the "spots-redis" bench in its smallest
// form (one round of first calls to new persistent Spots against a real
// redis-server) and checks its lines and the store commands it counted:
// a persistent first call reads the ownership record with the state's
// epoch in one round trip, claims, and reads the state once. No timing
// thresholds.
func TestSpotsRedisBench_Quick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out strings.Builder
	res, err := runSpotsRedis(ctx, &out, spotsRedisPlan{servers: 2, activations: 300, callers: 8, rounds: 1})
	text := out.String()
	t.Log("\n" + text)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`activations round=1 n=300 callers=16\s+[0-9.]+ activations/s\s+cpu/activation \d+µs`,
		`activations persistent first-call store=redis n=300\s+[0-9.]+ activations/s`,
		`goal first-call activations against one redis-server >= 10000/s: \d+/s (?:met|missed)`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no line matching %q", re)
		}
	}
	if res.Rate <= 0 {
		t.Errorf("rate %v", res.Rate)
	}
	// Two round trips per persistent first call (docs/spots.md): the
	// record with the state's epoch, then the claim that takes the state
	// with it. The nodes' lease renewals during the round add a few
	// hundredths.
	if math.Round(res.RoundTrips) != 2 || res.Calls["evalsha_ro"] < 1 || res.Calls["evalsha_ro"] >= 1.5 ||
		res.Calls["evalsha"] < 1 || res.Calls["evalsha"] >= 1.5 {
		t.Errorf("redis round trips per activation %.2f (%v), want 2: the read and the claim", res.RoundTrips, res.Calls)
	}
}
