package main

import (
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/inbox"
	"github.com/flowerhq/flower/levers"
)

// hookBinary is the flower executable the harness runs as its PreCompact
// hook. main sets it: the tests run commands in-process, inside a test
// binary no harness may run.
var hookBinary string

// hookWait bounds how long the hook waits for the running flower to take
// its report, so that flower hears of a blocked compaction before the
// harness goes on (DESIGN.md «Compaction levers»).
const hookWait = 2 * time.Second

// maxHookInput bounds what the hook reads of the harness's hook input.
const maxHookInput = 64 << 10

// hookCommand is flower's PreCompact hook, run by the harness (never by a
// person): it reports the attempt to the running flower through the
// step's inbox and blocks the compaction, whatever else happens.
func hookCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:   "hook",
		Hidden: true,
		Usage:  "flower's own harness hooks (run by the harness)",
		Subcommands: []*cli.Command{{
			Name:  "precompact",
			Usage: "block a compaction and tell the running flower",
			Flags: []cli.Flag{&cli.StringFlag{Name: "inbox", Usage: "the step's inbox directory"}},
			Action: func(c *cli.Context) error {
				in, _ := io.ReadAll(io.LimitReader(p.stdin, maxHookInput))
				if dir := c.String("inbox"); dir != "" {
					trigger := gjson.GetBytes(in, "trigger").String()
					if trigger != "manual" && trigger != "auto" {
						trigger = "unknown"
					}
					r := inbox.Request{Kind: inbox.KindCompact, Trigger: trigger,
						Session: clipString(gjson.GetBytes(in, "session_id").String(), 100), From: "PreCompact hook"}
					if name, err := inbox.Post(dir, r); err == nil {
						for deadline := time.Now().Add(hookWait); time.Now().Before(deadline) && !inbox.Taken(dir, name); {
							time.Sleep(10 * time.Millisecond)
						}
					}
				}
				// The answer that blocks, on stdout, whether or not the
				// report got through.
				_, err := fmt.Fprintln(p.stdout, levers.BlockDecision())
				return err
			},
		}},
	}
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
