package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
)

// versionFlag is flower's --version (-V: -v is --verbose).
func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print flower's version, its build and the harness it would run, then exit"}
}

func versionCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print flower's version, its build and the version of the harness it would run",
		UsageText: "flower version [--harness PATH] [--harness-kind claude|codex|gemini] [--json]\nflower --version",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "harness", EnvVars: []string{"FLOWER_HARNESS"}, Usage: "the harness executable: claude, codex or gemini",
				DefaultText: "claude on PATH, else the copy make installed; codex or gemini the same with --harness-kind"},
			harnessKindFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object: flower's version and build, and the harness's path, kind, why that one, version and tested versions"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments, got %q", c.Args().First())
			}
			v, err := versionOf(c.Context, inherited(c, "harness"), inherited(c, "harness-kind"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(p.stdout, v)
			}
			v.write(p.stdout)
			return nil
		},
	}
}

// harnessVersionTimeout bounds the harness's answer to --version.
const harnessVersionTimeout = 5 * time.Second

// versionReport is what flower version says: flower's version and build
// (the VCS revision and time Go recorded, and the Go version), and the
// harness a run would start, of the kind in use.
type versionReport struct {
	Flower  string         `json:"flower"`
	Build   buildInfo      `json:"build"`
	Harness harnessVersion `json:"harness"`
}

type buildInfo struct {
	version  string // flower's, the module's version
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

type harnessVersion struct {
	Kind    harnessKind `json:"kind"`
	Product string      `json:"product"`
	// Found is false when no harness of the kind is anywhere flower
	// looks; Missing then says where it looked.
	Found   bool   `json:"found"`
	Missing string `json:"missing,omitempty"`
	Path    string `json:"path,omitempty"`
	Why     string `json:"why,omitempty"`
	// Version is the first line of its --version, or why there is none.
	Version string   `json:"version,omitempty"`
	Tested  []string `json:"tested"`
}

// versionOf resolves the harness as a run would (chooseOf) and asks it its
// version. No harness is no error here: it is said. A kind and a binary
// that disagree are, as for a run.
func versionOf(ctx context.Context, flag, kind string) (versionReport, error) {
	v := versionReport{Build: readBuild()}
	v.Flower = v.Build.version
	ch, k, err := chooseOf(ctx, flag, kind)
	if err != nil && !errors.Is(err, errNoHarness) {
		return versionReport{}, err
	}
	if err != nil {
		k, _ = parseHarnessKind(kind)
		if k == "" {
			k = kindClaude
		}
	}
	h := harnessVersion{Kind: k, Product: k.product(), Tested: k.info().tested}
	if err != nil {
		h.Missing = err.Error()
	} else {
		h.Found, h.Path, h.Why, h.Version = true, ch.Path, ch.Why, askVersion(ctx, ch.Path)
	}
	v.Harness = h
	return v, nil
}

// printVersion is flower --version: versionOf, as text.
func printVersion(ctx context.Context, w io.Writer, harnessFlag, kind string) error {
	v, err := versionOf(ctx, harnessFlag, kind)
	if err != nil {
		return err
	}
	v.write(w)
	return nil
}

func (v versionReport) write(w io.Writer) {
	fmt.Fprintf(w, "flower %s (%s)\n", v.Flower, v.Build)
	h := v.Harness
	tested := strings.Join(h.Tested, ", ")
	if !h.Found {
		fmt.Fprintf(w, "harness: %s; flower is tested on %s\n", h.Missing, tested)
		return
	}
	fmt.Fprintf(w, "harness: %s %s (%s, %s; tested: %s)\n", console.Escape(h.Version), h.Path, h.Product, h.Why, tested)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readBuild is flower's version and build as Go recorded them.
func readBuild() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildInfo{version: "(no build information)"}
	}
	b := buildInfo{version: bi.Main.Version, Go: bi.GoVersion}
	if b.version == "" {
		b.version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build as flower version prints it.
func (b buildInfo) String() string {
	if b.Revision == "" {
		return b.Go
	}
	modified := ""
	if b.Modified {
		modified = ", modified"
	}
	return fmt.Sprintf("revision %.12s%s, %s, %s", b.Revision, modified, b.Time, b.Go)
}

// askVersion asks the harness at path for its version, within
// harnessVersionTimeout; a harness that does not answer is said to.
func askVersion(ctx context.Context, path string) string {
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
