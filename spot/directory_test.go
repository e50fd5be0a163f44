package spot

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// A delivery posted directly to a Spot (route's tell) happens before the
// Spot is marked closing (setClosing) or not at all: once setClosing has
// returned, no direct post can land behind the Spot's last turn. The test
// races the two many times and fails if a tell runs after the close.
func TestDirectory_NoDirectPostAfterClosing(t *testing.T) {
	for round := range 500 {
		d := newDirectory()
		act := &activation{id: "x"}
		d.put(act)
		var closed atomic.Bool
		var late, told atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < 50; i++ {
					_, handled, _ := d.route("x", func(*activation) bool {
						goruntime.Gosched() // a slow check (the cycle test) widens any gap before the post
						return true
					}, func(*activation) error {
						if closed.Load() {
							late.Add(1)
						}
						told.Add(1)
						return nil
					})
					if !handled {
						d.slowDone("x")
					}
				}
			}()
		}
		close(start)
		for told.Load() < 3 { // the routers are in their loops
			goruntime.Gosched()
		}
		d.setClosing(act)
		closed.Store(true)
		wg.Wait()
		if n := late.Load(); n > 0 {
			t.Fatalf("round %d: %d direct posts ran after the Spot was marked closing", round, n)
		}
	}
}
