package mailbox

import (
	"errors"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func TestQuota_Admit(t *testing.T) {
	tests := []struct {
		name     string
		maxMsgs  int64
		maxBytes int64
		sizes    []int64 // admitted in order
		refuse   Budget  // budget that refuses the last size, 0 = admitted
	}{
		{"unlimited", 0, 0, []int64{1 << 40, 1, 0}, 0},
		{"messages fill", 2, 0, []int64{1, 1}, 0},
		{"messages refuse", 2, 0, []int64{1, 1, 1}, BudgetMessages},
		{"bytes fill", 0, 10, []int64{4, 6}, 0},
		{"bytes refuse", 0, 10, []int64{4, 7}, BudgetBytes},
		{"bytes larger than budget", 0, 10, []int64{11}, BudgetBytes},
		{"both: messages refuse first", 2, 100, []int64{1, 1, 1}, BudgetMessages},
		{"both: bytes refuse", 5, 100, []int64{60, 41}, BudgetBytes},
		{"both: exact fit", 2, 100, []int64{60, 40}, 0},
		{"negative size counts zero", 0, 1, []int64{-5, 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQuota(tt.maxMsgs, tt.maxBytes)
			var err error
			for _, s := range tt.sizes {
				err = q.Admit(s)
				if err != nil {
					break
				}
			}
			if tt.refuse == 0 {
				if err != nil {
					t.Fatalf("Admit: %v", err)
				}
				return
			}
			var fe *FullError
			if !errors.As(err, &fe) || !errors.Is(err, ErrMailboxFull) {
				t.Fatalf("err = %v, want *FullError matching ErrMailboxFull", err)
			}
			if fe.Budget != tt.refuse {
				t.Fatalf("budget = %v, want %v", fe.Budget, tt.refuse)
			}
			st := q.Stats()
			if st.Rejected != 1 || st.Admitted != int64(len(tt.sizes)-1) {
				t.Fatalf("stats = %+v", st)
			}
		})
	}
}

func TestQuota_ReleaseRestoresRoom(t *testing.T) {
	q := NewQuota(1, 10)
	if err := q.Admit(10); err != nil {
		t.Fatal(err)
	}
	if err := q.Admit(0); !errors.Is(err, ErrMailboxFull) {
		t.Fatalf("second Admit = %v, want full", err)
	}
	q.Release(10)
	st := q.Stats()
	if st.Depth != 0 || st.Bytes != 0 || st.Processed != 1 {
		t.Fatalf("after release: %+v", st)
	}
	if err := q.Admit(10); err != nil {
		t.Fatalf("Admit after release: %v", err)
	}
}

func TestQuota_ClampsMessagesToFitPacking(t *testing.T) {
	q := NewQuota(1<<62, 1<<40)
	st := q.Stats()
	if st.MaxBytes != 1<<40 || st.MaxMessages != 1<<23-1 {
		t.Fatalf("limits = %d/%d", st.MaxMessages, st.MaxBytes)
	}
}

// TestQuota_MatchesOracle checks any sequential history of Admit/Release
// against a naive model of the two budgets.
func TestQuota_MatchesOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxM := rapid.Int64Range(0, 6).Draw(t, "maxMsgs")
		maxB := rapid.Int64Range(0, 50).Draw(t, "maxBytes")
		q := NewQuota(maxM, maxB)
		var held []int64
		var bytes int64
		for i := range rapid.IntRange(1, 60).Draw(t, "ops") {
			if len(held) > 0 && rapid.Bool().Draw(t, "release") {
				s := held[0]
				held = held[1:]
				bytes -= s
				q.Release(s)
				continue
			}
			size := rapid.Int64Range(0, 20).Draw(t, "size")
			_ = i
			var want Budget
			switch {
			case maxM > 0 && int64(len(held)) >= maxM:
				want = BudgetMessages
			case maxB > 0 && bytes+size > maxB:
				want = BudgetBytes
			}
			err := q.Admit(size)
			if want == 0 {
				if err != nil {
					t.Fatalf("Admit(%d) = %v with %d msgs %d bytes", size, err, len(held), bytes)
				}
				held = append(held, size)
				bytes += size
			} else {
				var fe *FullError
				if !errors.As(err, &fe) || fe.Budget != want {
					t.Fatalf("Admit(%d) = %v, want %v refusal", size, err, want)
				}
			}
			st := q.Stats()
			if st.Depth != int64(len(held)) || st.Bytes != bytes {
				t.Fatalf("stats %+v, model %d msgs %d bytes", st, len(held), bytes)
			}
		}
	})
}

// TestQuota_ConcurrentNeverExceeds hammers one quota from many goroutines and
// checks after every admission that neither budget is exceeded, and that the
// counters balance at the end.
func TestQuota_ConcurrentNeverExceeds(t *testing.T) {
	for _, lim := range []struct{ m, b int64 }{{4, 0}, {0, 64}, {4, 64}} {
		q := NewQuota(lim.m, lim.b)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 2000 {
					size := int64((g + i) % 20)
					err := q.Admit(size)
					if err != nil {
						var fe *FullError
						if !errors.As(err, &fe) {
							errs <- err
							return
						}
						continue
					}
					st := q.Stats()
					if (lim.m > 0 && st.Depth > lim.m) || (lim.b > 0 && st.Bytes > lim.b) {
						errs <- errors.New("budget exceeded")
						return
					}
					q.Release(size)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		st := q.Stats()
		if st.Depth != 0 || st.Bytes != 0 || st.Admitted != st.Processed || st.Admitted+st.Rejected != 16*2000 {
			t.Fatalf("limits %+v: final stats %+v", lim, st)
		}
	}
}
