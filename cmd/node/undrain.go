package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
)

func newUndrainCmd() *cobra.Command {
	var target adminTarget
	c := &cobra.Command{
		Use:   "undrain --admin ADDR",
		Short: "Undo a drain: the node returns to new selection without a restart",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac, err := newAdminClient(target, adminTimeout+time.Second)
			if err != nil {
				return err
			}
			code, raw, err := ac.do(cmd.Context(), http.MethodPost, "/undrain", nil)
			if err != nil {
				return err
			}
			var resp admin.UndrainResponse
			if code == http.StatusOK {
				if err := json.Unmarshal(raw, &resp); err != nil {
					return fmt.Errorf("undrain: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "undrained mesh=%s\n", strings.Join(resp.Meshes, ","))
				return nil
			}
			if json.Unmarshal(raw, &resp) == nil && resp.Error != "" {
				return fmt.Errorf("undrain: %s", resp.Error)
			}
			return fail(code, raw)
		},
	}
	addAdminFlag(c, &target)
	return c
}
