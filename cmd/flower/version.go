package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/harness"
)

// versionFlag is flower's --version (-V: -v is --verbose).
func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print flower's version, its build and the harness it would run, then exit"}
}

func versionCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print flower's version, its build and the version of the harness it would run",
		UsageText: "flower version [--harness PATH]\nflower --version",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the claude executable", DefaultText: "claude on PATH, else the copy make installed"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments, got %q", c.Args().First())
			}
			return printVersion(c.Context, p.stdout, c.String("harness"))
		},
	}
}

// harnessVersionTimeout bounds the harness's answer to --version.
const harnessVersionTimeout = 5 * time.Second

// printVersion writes flower's version, its build (the VCS revision and
// time Go recorded, and the Go version) and the harness flower would run
// with the version it reports. No harness is no error here: it is said.
func printVersion(ctx context.Context, w io.Writer, harnessFlag string) error {
	fmt.Fprintf(w, "flower %s\n", buildLine())
	path, err := findHarness(harnessFlag)
	if err != nil {
		fmt.Fprintf(w, "harness: no harness found (pass --harness, set FLOWER_HARNESS, put claude on PATH, or run `make harness`); flower is tested on %s\n", strings.Join(harness.TestedVersions, ", "))
		return nil
	}
	fmt.Fprintf(w, "harness: %s %s (tested: %s)\n", console.Escape(harnessVersion(ctx, path)), path, strings.Join(harness.TestedVersions, ", "))
	return nil
}

// buildLine is flower's version and build as Go recorded them.
func buildLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	build := bi.GoVersion
	if rev != "" {
		build = fmt.Sprintf("revision %.12s%s, %s, %s", rev, modified, at, bi.GoVersion)
	}
	return fmt.Sprintf("%s (%s)", version, build)
}

// harnessVersion asks the harness at path for its version, within
// harnessVersionTimeout; a harness that does not answer is said to.
func harnessVersion(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, harnessVersionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	switch {
	case ctx.Err() != nil:
		return fmt.Sprintf("(did not answer --version within %v)", harnessVersionTimeout)
	case err != nil || line == "":
		return "(its --version failed)"
	}
	if len(line) > 80 {
		line = line[:80]
	}
	return line
}
