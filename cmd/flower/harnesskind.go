package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/endpoint"
	"github.com/flowerhq/flower/levers"
)

// harnessKind is which harness flower drives: the Claude Code CLI (every
// front) or the Codex CLI (its app-server front; DESIGN.md «Fronts»).
type harnessKind string

const (
	kindClaude harnessKind = "claude"
	kindCodex  harnessKind = "codex"
)

// envHarnessKind sets --harness-kind.
const envHarnessKind = "FLOWER_HARNESS_KIND"

// harnessKindFlag is --harness-kind, shared by the commands that start a
// harness.
func harnessKindFlag() cli.Flag {
	return &cli.StringFlag{Name: "harness-kind", EnvVars: []string{envHarnessKind},
		Usage:       "which harness --harness is: claude (the Claude Code CLI) or codex (the Codex CLI)",
		DefaultText: "what --harness's --version says; claude without --harness"}
}

// parseHarnessKind reads --harness-kind; "" is left to detection.
func parseHarnessKind(s string) (harnessKind, error) {
	switch k := harnessKind(strings.ToLower(strings.TrimSpace(s))); k {
	case "", kindClaude, kindCodex:
		return k, nil
	}
	return "", usagef("--harness-kind %q: want claude or codex", s)
}

// chooseOf resolves the harness a run starts, why that one
// (chooseHarness), and its kind. A kind given picks where an unnamed
// harness is looked for (claude or codex on PATH, else the copy make
// installed). Without one, a named harness's kind is its file name when
// that is claude or codex, else what its --version says (codex-cli X.Y.Z
// is the Codex CLI; anything else the Claude Code CLI, as before there was
// a choice); an unnamed one is claude.
func chooseOf(ctx context.Context, flag, kind string) (harnessChoice, harnessKind, error) {
	k, err := parseHarnessKind(kind)
	if err != nil {
		return harnessChoice{}, "", err
	}
	if k == kindCodex && flag == "" {
		p, err := findCodex()
		why := "codex on PATH"
		if p == cachedCodex() {
			why = "flower's pinned Codex CLI (no codex on PATH)"
		}
		return harnessChoice{Path: p, Why: why}, k, err
	}
	ch, err := chooseHarness(flag)
	switch {
	case err != nil:
		return harnessChoice{}, "", err
	case k != "":
		// A kind given over a binary of the other kind would start a
		// front that waits for what the binary never says.
		if other, said, ok := knownKind(ctx, ch.Path); ok && other != k {
			return harnessChoice{}, "", usagef("--harness-kind %s, but %s is %s%s: name %s with --harness, or leave --harness-kind out",
				k, ch.Path, other.product(), said, k.product())
		}
		return ch, k, nil
	}
	return ch, detectKind(ctx, ch.Path), nil
}

// product is the kind as a person names it.
func (k harnessKind) product() string {
	if k == kindCodex {
		return "the Codex CLI"
	}
	return "the Claude Code CLI"
}

// knownKind is the kind of the harness at path when its name or its
// --version says it for certain, with what its --version said (or "");
// a stand-in that says neither is no kind known.
func knownKind(ctx context.Context, path string) (k harnessKind, said string, ok bool) {
	switch strings.TrimSuffix(filepath.Base(path), ".exe") {
	case "claude":
		return kindClaude, "", true
	case "codex":
		return kindCodex, "", true
	}
	v := askVersion(ctx, path)
	said = fmt.Sprintf(" (its --version says %q)", v)
	if _, ok := codexrpc.VersionOf(v); ok {
		return kindCodex, said, true
	}
	if strings.Contains(v, "(Claude Code)") {
		return kindClaude, said, true
	}
	return "", "", false
}

// flagEnv is the variable of each flag inherited reads.
var flagEnv = map[string]string{"harness": "FLOWER_HARNESS", "harness-kind": envHarnessKind}

// inherited is the flag name as given on the command line to c, else to
// the first command above it (flower --harness-kind codex doctor), else
// from its variable or default: a subcommand's own flag of a name hides
// its parent's.
func inherited(c *cli.Context, name string) string {
	env := os.Getenv(flagEnv[name])
	for _, cc := range c.Lineage() {
		// A flag its variable set is listed too: only a value of another
		// was given on the command line.
		if v := cc.String(name); slices.Contains(cc.LocalFlagNames(), name) && v != "" && v != env {
			return v
		}
	}
	return c.String(name) // its variable, else its default
}

// detectKind is the kind of the harness at path, from its name, else its
// --version; the Claude Code CLI when neither says.
func detectKind(ctx context.Context, path string) harnessKind {
	if k, _, ok := knownKind(ctx, path); ok {
		return k
	}
	return kindClaude
}

// cachedCodex is where scripts/install-codex.sh puts the pinned Codex CLI.
func cachedCodex() string {
	return filepath.Join(cacheDir(), "flower", "codex", codexrpc.PinnedVersion, "node_modules", "@openai", "codex",
		"vendor", "x86_64-unknown-linux-musl", "bin", "codex")
}

// findCodex is codex on PATH, else the cached pinned copy.
func findCodex() (string, error) {
	if p, err := exec.LookPath("codex"); err == nil {
		return p, nil
	}
	if p := cachedCodex(); isExecutable(p) {
		return p, nil
	}
	return "", usageError{fmt.Errorf("%w for --harness-kind codex: looked for codex on PATH and %s; pass --harness, put codex on PATH, or run `make codex`", errNoHarness, cachedCodex())}
}

// cacheDir is $XDG_CACHE_HOME, else ~/.cache.
func cacheDir() string {
	if cache := os.Getenv("XDG_CACHE_HOME"); cache != "" {
		return cache
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache")
}

// sameHarness goes on with a past run on the harness it was started on
// (the manifest's harness_kind, "" for a run of an older flower): taken
// when --harness-kind is not given, and a different one refused, since a
// session of one harness is nothing the other can resume.
func (set *jobSettings) sameHarness(c *cli.Context, recorded string) error {
	if recorded == "" {
		return nil
	}
	if !c.IsSet("harness-kind") {
		set.harnessKind = recorded
		return nil
	}
	if k, _ := parseHarnessKind(set.harnessKind); k != "" && string(k) != recorded {
		return usagef("this run was started on --harness-kind %s; it goes on on the same harness (leave --harness-kind out, or start a new run)", recorded)
	}
	return nil
}

// reachOf is the engine's check of the API endpoint the harness of kind
// talks to, started with env and args in workspace (DESIGN.md
// «Unreachable endpoint»). Claude Code's endpoint is the one flower holds
// it at: ANTHROPIC_BASE_URL as the environment and the settings files set
// it, or the default (levers.Endpoint, read when asked); the Codex front
// reads its provider's base_url from Codex's config and gives it (none:
// the built-in provider, not checked).
func reachOf(kind harnessKind, env, args []string, workspace string) func(string) error {
	if env == nil {
		env = os.Environ()
	}
	return func(given string) error {
		url, fix := given, "check the base_url of your model provider in $CODEX_HOME/config.toml (or -c), or the network"
		if kind != kindCodex {
			own, _ := levers.Read(args, workspace)
			url, fix = levers.Endpoint(args, env, workspace, own), "check the network, or set ANTHROPIC_BASE_URL"
			if url != levers.DefaultEndpoint {
				fix = "check ANTHROPIC_BASE_URL (the environment, or a settings file's env), or the network"
			}
		}
		if url == "" {
			return nil
		}
		err := endpoint.Check(context.Background(), url, env)
		if ue, ok := err.(*endpoint.UnreachableError); ok {
			ue.Fix = fix
		}
		return err
	}
}
