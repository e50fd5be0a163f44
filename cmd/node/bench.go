package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/cmd/node/internal/benchrun"
)

func newBenchCmd() *cobra.Command {
	var quick, list bool
	var duration time.Duration
	var nodes []int
	c := &cobra.Command{
		Use:   "bench [--quick] [--nodes N,...] [NAME...]",
		Short: "Run the built-in benchmarks without go test",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				for _, b := range benchrun.List() {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", b.Name, b.About)
				}
				return nil
			}
			ctx := benchrun.WithScaleNodes(benchrun.WithDuration(cmd.Context(), duration), nodes)
			err := benchrun.Run(ctx, cmd.OutOrStdout(), args, quick)
			if err != nil && strings.Contains(err.Error(), "unknown bench") {
				return usagef(err.Error())
			}
			return err
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "shorter runs (smoke test; numbers are indicative)")
	c.Flags().BoolVar(&list, "list", false, "list the benchmarks and exit")
	c.Flags().DurationVar(&duration, "duration", 0, "how long the timed benches run (soak: default 2m; scale: the idle window, default 10s)")
	c.Flags().IntSliceVar(&nodes, "nodes", nil, "scale: the mesh sizes (default 4,8,16,32,64,128; quick 4,8)")
	benchrun.AddFlags(c.Flags())
	c.AddCommand(newBenchCompareCmd(), newBenchCompareServerCmd(), newBenchCompareReportCmd())
	return c
}

// newBenchCompareCmd is `bench compare`: ZLink against Proto.Actor remote,
// raw zmq4 and raw TCP, every server in a process of its own.
func newBenchCompareCmd() *cobra.Command {
	var o benchrun.CompareOptions
	var scenarios, impls []string
	var noExtras, noProbe bool
	c := &cobra.Command{
		Use:   "compare [--quick] [--spots] [--json FILE] [--docs FILE --img DIR]",
		Short: "Two-process comparison: ZLink vs Proto.Actor remote, raw zmq4, raw TCP; --spots: a ZLink Spot vs a Proto.Actor cluster grain (PROFILE=1 saves profiles)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Scenarios, o.Impls = scenarios, impls
			o.Extras = !noExtras && !o.Spots && len(scenarios) == 0 && len(impls) == 0
			o.DefaultLimitsProbe = !noProbe && !o.Quick && (len(scenarios) == 0 || slices.Contains(scenarios, "16KiB-pipelined"))
			if os.Getenv("PROFILE") == "1" && o.ProfileDir == "" {
				o.ProfileDir = "bench/results/profiles-" + time.Now().Format("2006-01-02")
				if o.JSONPath != "" {
					o.ProfileDir = strings.TrimSuffix(o.JSONPath, ".json") + "-profiles"
				}
			}
			_, err := benchrun.RunCompare(cmd.Context(), cmd.OutOrStdout(), o)
			if err != nil && strings.Contains(err.Error(), "unknown ") {
				return usagef(err.Error())
			}
			return err
		},
	}
	f := c.Flags()
	f.BoolVar(&o.Quick, "quick", false, "short runs, 2 rounds (smoke test; numbers are indicative)")
	f.IntVar(&o.Rounds, "rounds", 0, "rounds per scenario, each running every implementation once (default 7, quick 2)")
	f.DurationVar(&o.Lockstep, "lockstep", 0, "length of one lockstep run (default 1s, quick 150ms)")
	f.DurationVar(&o.Pipelined, "pipelined", 0, "length of one pipelined run (default 1.5s, quick 250ms)")
	f.StringSliceVar(&scenarios, "scenarios", nil, "only these scenarios: 64B-lockstep, 64B-pipelined, 16KiB-lockstep, 16KiB-pipelined")
	f.StringSliceVar(&impls, "impls", nil, "only these beside zlink: protoactor, zmq4, tcp, zlink-tls (ZLink over TLS: what TLS costs); with --spots: protoactor-grain")
	f.BoolVar(&o.Spots, "spots", false, "virtual actors instead: a ZLink Spot (caller node + Object Server, one redis-server) vs a Proto.Actor cluster grain "+
		"(automanaged provider, disthash lookup); --docs regenerates the spots-compare:begin/spots-compare:end region")
	f.BoolVar(&noExtras, "no-extras", false, "skip the multicast and failover parts")
	f.BoolVar(&noProbe, "no-default-limits-probe", false, "skip the Proto.Actor run with gRPC's default message limit")
	f.StringVar(&o.JSONPath, "json", "", "write the results to this JSON file")
	f.StringVar(&o.DocsPath, "docs", "", "regenerate the compare:begin/compare:end region of this markdown file")
	f.StringVar(&o.ImgDir, "img", "", "write one SVG chart per scenario into this directory")
	f.StringVar(&o.ProfileDir, "profile", "", "save CPU and allocation profiles of every process here (PROFILE=1 picks a directory)")
	return c
}

// newBenchCompareServerCmd is the server side of `bench compare`, run by
// the bench itself in a child process.
func newBenchCompareServerCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "compare-server --impl NAME [--listen HOST:PORT]",
		Short:              "Server process of bench compare (started by it)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchrun.CompareServerMain(args, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

// newBenchCompareReportCmd regenerates the report from a results file.
func newBenchCompareReportCmd() *cobra.Command {
	var in, docs, img string
	c := &cobra.Command{
		Use:   "compare-report --json FILE [--docs FILE] [--img DIR]",
		Short: "Regenerate the bench compare tables and charts from a results JSON file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in == "" {
				return usagef("bench compare-report: --json is required")
			}
			r, err := benchrun.ReadCompareJSON(in)
			if err != nil {
				return err
			}
			return benchrun.WriteCompareReport(r, docs, img, in)
		},
	}
	c.Flags().StringVar(&in, "json", "", "results file written by bench compare --json")
	c.Flags().StringVar(&docs, "docs", "", "markdown file whose compare:begin/compare:end region is regenerated")
	c.Flags().StringVar(&img, "img", "", "directory for the SVG charts")
	return c
}
