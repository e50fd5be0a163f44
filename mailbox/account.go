package mailbox

import "github.com/zlink-go/zlink/internal/mbacct"

// account is a Quota as the mailbox that drains it writes it
// (internal/mbacct): batched releases, the processed count, the depth of
// messages outside the budgets.
type account Quota

func (a *account) ReleaseN(n, bytes int64) { (*Quota)(a).releaseN(n, bytes) }
func (a *account) AddProcessed(n int64)    { a.processed.Add(n) }
func (a *account) AddFree(d int64)         { a.free.Add(d) }

func init() {
	mbacct.Of = func(q any) mbacct.Account { return (*account)(q.(*Quota)) }
}
