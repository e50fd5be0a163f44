package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/cmd/node/internal/benchrun"
)

func newBenchCmd() *cobra.Command {
	var quick, list bool
	var duration time.Duration
	c := &cobra.Command{
		Use:   "bench [--quick] [NAME...]",
		Short: "Run the built-in benchmarks without go test",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				for _, b := range benchrun.List() {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", b.Name, b.About)
				}
				return nil
			}
			err := benchrun.Run(benchrun.WithDuration(cmd.Context(), duration), cmd.OutOrStdout(), args, quick)
			if err != nil && strings.Contains(err.Error(), "unknown bench") {
				return usagef(err.Error())
			}
			return err
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "shorter runs (smoke test; numbers are indicative)")
	c.Flags().BoolVar(&list, "list", false, "list the benchmarks and exit")
	c.Flags().DurationVar(&duration, "duration", 0, "how long the timed benches run (soak: default 2m)")
	return c
}
