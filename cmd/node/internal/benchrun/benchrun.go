package benchrun

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Bench is one named benchmark. Run writes its result lines to w. quick
// asks for a shorter run (CI smoke test); the numbers are then indicative.
type Bench struct {
	Name  string
	About string
	Run   func(ctx context.Context, w io.Writer, quick bool) error
	// Explicit benches run only when named (long runs such as the soak).
	Explicit bool
}

type durationKey struct{}

// WithDuration asks the benches that run for a chosen time (the soak) to
// run for d.
func WithDuration(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, durationKey{}, d)
}

// durationFrom is the duration asked with WithDuration, or def.
func durationFrom(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Value(durationKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return def
}

var (
	mu      sync.Mutex
	benches = map[string]Bench{}
)

// register adds a bench at init time.
func register(b Bench) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := benches[b.Name]; dup {
		panic("benchrun: duplicate bench " + b.Name)
	}
	benches[b.Name] = b
}

// List returns the benches sorted by name.
func List() []Bench {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Bench, 0, len(benches))
	for _, b := range benches {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run runs the named benches (all when names is empty) in name order.
func Run(ctx context.Context, w io.Writer, names []string, quick bool) error {
	all := List()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var unknown []string
	for n := range want {
		found := false
		for _, b := range all {
			found = found || b.Name == n
		}
		if !found {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("benchrun: unknown bench %s", strings.Join(unknown, ", "))
	}
	for _, b := range all {
		if (len(want) > 0 && !want[b.Name]) || (len(want) == 0 && b.Explicit) {
			continue
		}
		fmt.Fprintf(w, "== %s: %s\n", b.Name, b.About)
		if err := b.Run(ctx, w, quick); err != nil {
			return fmt.Errorf("bench %s: %w", b.Name, err)
		}
	}
	return nil
}
