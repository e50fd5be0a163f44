package benchrun

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/zlink-go/zlink/actors"
)

func init() {
	register(Bench{
		Name:  "local",
		About: "local tell and request through actors/ (bounded mailbox) vs raw protoactor-go (default mailbox)",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			n := 1_000_000
			if quick {
				n = 100_000
			}
			// Three rounds, median reported: protoactor's own speed swings
			// between runs on a 2-core machine; both sides get the same
			// treatment in every round.
			rs := make([]actors.BenchResult, 0, 3)
			for i := 0; i < 3; i++ {
				r, err := actors.CompareLocal(n)
				if err != nil {
					return err
				}
				fmt.Fprintln(w, r.String())
				rs = append(rs, r)
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].TellRatio < rs[j].TellRatio })
			med := rs[1]
			fmt.Fprintf(w, "ratio (median of 3) tell=%.2fx request=%.2fx extra_allocs_per_msg=%.2f (goal: >= 0.80x, <= 1 extra alloc)\n",
				med.TellRatio, med.RequestRatio, med.TellExtraAlloc)
			return nil
		},
	})
}
