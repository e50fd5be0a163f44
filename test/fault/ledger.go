package fault

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Ledger accounts for the calls of a fault scenario: every call issued
// must end exactly once, with a reply or an error matching one of the
// ledger's typed errors. Replies are counted per RID that answered, in
// all and since the last Mark. It runs calls itself (Run) or counts the
// calls a scenario makes (Begin, End).
type Ledger struct {
	typed []error

	mu                 sync.Mutex
	issued, ended, ok  int
	byRID, marks, errs map[string]int
	untyped            []error

	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// NewLedger returns an empty ledger; typed are the errors a call may end
// with (matched with errors.Is); any other is counted as untyped.
func NewLedger(typed ...error) *Ledger {
	return &Ledger{typed: typed, byRID: map[string]int{}, marks: map[string]int{}, errs: map[string]int{},
		stop: make(chan struct{})}
}

// Call is one call a ledger runs; it returns the RID that answered.
type Call func(ctx context.Context) (rid string, err error)

// Run starts workers goroutines that make call in a loop, each call
// bounded by timeout, until Stop. After a failed call a worker pauses a
// millisecond (a scenario with no Server must not spin).
func (l *Ledger) Run(workers int, timeout time.Duration, call Call) *Ledger {
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				l.Begin()
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				rid, err := call(ctx)
				cancel()
				l.End(rid, err)
				if err != nil {
					time.Sleep(time.Millisecond) // pace a failing load
				}
			}
		}()
	}
	return l
}

// Begin counts a call issued.
func (l *Ledger) Begin() {
	l.mu.Lock()
	l.issued++
	l.mu.Unlock()
}

// End counts the end of a call: answered by rid, or failed with err.
func (l *Ledger) End(rid string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended++
	if err == nil {
		l.ok++
		l.byRID[rid]++
		l.marks[rid]++
		return
	}
	for _, want := range l.typed {
		if errors.Is(err, want) {
			l.errs[want.Error()]++
			return
		}
	}
	l.untyped = append(l.untyped, err)
}

// Stop ends Run's workers and waits for their calls to end. Idempotent.
func (l *Ledger) Stop() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// Mark restarts the per-RID counts of Since.
func (l *Ledger) Mark() {
	l.mu.Lock()
	clear(l.marks)
	l.mu.Unlock()
}

// Since is the number of calls rid answered since the last Mark.
func (l *Ledger) Since(rid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.marks[rid]
}

// Served is the number of calls rid answered in all.
func (l *Ledger) Served(rid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byRID[rid]
}

// Failed is the number of calls that ended with err (one of the typed
// errors).
func (l *Ledger) Failed(err error) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs[err.Error()]
}

// Account is a ledger's counts at one moment.
type Account struct {
	Issued, Ended, OK int
	ByRID             map[string]int // answered calls by RID
	Errs              map[string]int // failed calls by typed error text
	Untyped           []error        // errors that matched no typed error
}

// Account returns a copy of the counts.
func (l *Ledger) Account() Account {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := Account{Issued: l.issued, Ended: l.ended, OK: l.ok, ByRID: map[string]int{}, Errs: map[string]int{},
		Untyped: append([]error(nil), l.untyped...)}
	for k, v := range l.byRID {
		a.ByRID[k] = v
	}
	for k, v := range l.errs {
		a.Errs[k] = v
	}
	return a
}

// Add sums b into a.
func (a Account) Add(b Account) Account {
	out := Account{Issued: a.Issued + b.Issued, Ended: a.Ended + b.Ended, OK: a.OK + b.OK,
		ByRID: map[string]int{}, Errs: map[string]int{}, Untyped: append(append([]error(nil), a.Untyped...), b.Untyped...)}
	for _, m := range []map[string]int{a.ByRID, b.ByRID} {
		for k, v := range m {
			out.ByRID[k] += v
		}
	}
	for _, m := range []map[string]int{a.Errs, b.Errs} {
		for k, v := range m {
			out.Errs[k] += v
		}
	}
	return out
}

// Check reconciles the counts: every call issued ended, none with an
// untyped error.
func (a Account) Check() error {
	if a.Issued != a.Ended {
		return fmt.Errorf("%d calls issued, %d ended", a.Issued, a.Ended)
	}
	if len(a.Untyped) > 0 {
		return fmt.Errorf("%d calls ended with an untyped error, first: %w", len(a.Untyped), a.Untyped[0])
	}
	return nil
}
