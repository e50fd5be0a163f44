package spot

import (
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// MailboxDepth is, for tests, the number of messages admitted against the
// budgets of the active Spot (kind, id) on n — its mailbox and its reentry
// queue — or -1 when it is not active there.
func MailboxDepth(n *routemesh.Node, kind, id string) int64 {
	rt, err := of(n)
	if err != nil {
		return -1
	}
	ks := rt.kinds[kind]
	if ks == nil {
		return -1
	}
	act := ks.dir.get(id)
	if act == nil {
		return -1
	}
	return act.ref.Quota().Stats().Depth
}

// SetMinReminderPeriod lowers the shortest reminder period for a test
// (the public minimum is MinReminderPeriod) and returns the undo.
func SetMinReminderPeriod(d time.Duration) func() {
	old := minReminderPeriod
	minReminderPeriod = d
	return func() { minReminderPeriod = old }
}
