package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
)

// newSpotRemindersCmd is `spot-reminders`: list, register or cancel the
// durable reminders of one Spot through a node's admin API
// (/spots/reminders, spot.Reminders, spot.RegisterReminder,
// spot.CancelReminder); it activates nothing.
func newSpotRemindersCmd() *cobra.Command {
	var target adminTarget
	var kind, id, mesh, set, cancel, payload, at string
	var every, in time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "spot-reminders --admin ADDR --kind K --id ID [--mesh NAME] [--set NAME [--every D] [--in D | --at TIME] [--payload S] | --cancel NAME] [--json]",
		Short: "List a Spot's durable reminders, or register (--set) or cancel (--cancel) one",
		Long: `List a Spot's durable reminders (name, next due time, period, payload),
or register one with --set NAME (repeating --every D, at least 1s; first due
--in D or --at an RFC 3339 time, else one period from now; without --every it
fires once), or cancel one with --cancel NAME. The kind needs an OnReminder
handler on its Object Servers to fire them. Output lines:

  reminder kind=K id=ID name=N due=TIME period=D payload=S
  cancelled kind=K id=ID name=N found=true|false`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case kind == "" || id == "":
				return usagef("spot-reminders needs --kind K and --id ID")
			case set != "" && cancel != "":
				return usagef("spot-reminders: --set or --cancel, not both")
			case set == "" && (every != 0 || in != 0 || at != "" || payload != ""):
				return usagef("spot-reminders: --every, --in, --at and --payload go with --set NAME")
			case in != 0 && at != "":
				return usagef("spot-reminders: --in or --at, not both")
			case set != "" && every == 0 && in == 0 && at == "":
				return usagef("spot-reminders --set needs --every D, --in D or --at TIME")
			case every < 0 || in < 0:
				return usagef("spot-reminders: --every and --in must not be negative")
			}
			var due *time.Time
			if at != "" {
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return usagef(fmt.Sprintf("--at %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", at))
				}
				due = &t
			}
			ac, err := newAdminClient(target, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			q := spotAdminQuery("kind", kind, "id", id, "mesh", mesh)
			out := cmd.OutOrStdout()
			switch {
			case cancel != "":
				raw, err := spotAdminDo(cmd, ac, http.MethodPost, "/spots/reminders/cancel?"+spotAdminQuery("kind", kind, "id", id, "name", cancel, "mesh", mesh))
				if err != nil {
					return err
				}
				if asJSON {
					_, err = out.Write(raw)
					return err
				}
				var r admin.ReminderCancelResponse
				if err := json.Unmarshal(raw, &r); err != nil {
					return printSpotAdminError(out, "protocol", "spot-reminders: "+err.Error())
				}
				fmt.Fprintf(out, "cancelled kind=%s id=%s name=%s found=%t\n", r.Kind, r.ID, r.Name, r.Cancelled)
				return nil
			case set != "":
				req := admin.ReminderRequest{Name: set, Due: due, Payload: payload}
				if every > 0 {
					req.Period = every.String()
				}
				if in > 0 {
					req.In = in.String()
				}
				raw, err := spotAdminDoBody(cmd, ac, http.MethodPost, "/spots/reminders?"+q, req)
				if err != nil {
					return err
				}
				if asJSON {
					_, err = out.Write(raw)
					return err
				}
				var r admin.ReminderInfo
				if err := json.Unmarshal(raw, &r); err != nil {
					return printSpotAdminError(out, "protocol", "spot-reminders: "+err.Error())
				}
				printReminder(out, kind, id, r)
				return nil
			}
			raw, err := spotAdminDo(cmd, ac, http.MethodGet, "/spots/reminders?"+q)
			if err != nil {
				return err
			}
			if asJSON {
				_, err = out.Write(raw)
				return err
			}
			var r admin.RemindersResponse
			if err := json.Unmarshal(raw, &r); err != nil {
				return printSpotAdminError(out, "protocol", "spot-reminders: "+err.Error())
			}
			for _, rm := range r.Reminders {
				printReminder(out, r.Kind, r.ID, rm)
			}
			return nil
		},
	}
	addAdminFlag(c, &target)
	fs := c.Flags()
	fs.StringVar(&kind, "kind", "", "the Spot's kind (e.g. auction)")
	fs.StringVar(&id, "id", "", "the Spot's ID")
	fs.StringVar(&mesh, "mesh", "", "MeshName (default: the node's first mesh)")
	fs.StringVar(&set, "set", "", "register (or replace) the reminder NAME")
	fs.DurationVar(&every, "every", 0, "with --set: repeat every D (at least 1s; 0: once)")
	fs.DurationVar(&in, "in", 0, "with --set: first due D from now")
	fs.StringVar(&at, "at", "", "with --set: first due at this RFC 3339 time")
	fs.StringVar(&payload, "payload", "", "with --set: the payload each firing gets (text)")
	fs.StringVar(&cancel, "cancel", "", "cancel the reminder NAME")
	fs.BoolVar(&asJSON, "json", false, "print the admin API's JSON")
	return c
}

func printReminder(w io.Writer, kind, id string, r admin.ReminderInfo) {
	fmt.Fprintf(w, "reminder kind=%s id=%s name=%s due=%s period=%s payload=%q\n", kind, id, r.Name,
		r.Due.UTC().Format(time.RFC3339Nano), time.Duration(r.PeriodMs)*time.Millisecond, r.Payload)
}
