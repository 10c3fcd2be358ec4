package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/checkup"
	"github.com/flowerhq/flower/codex"
	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/demo"
	"github.com/flowerhq/flower/endpoint"
	"github.com/flowerhq/flower/envinject"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/gemini"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/interactive"
	"github.com/flowerhq/flower/levers"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/statusline"
	"github.com/flowerhq/flower/trust"
)

// harnessKind is which harness flower drives: the Claude Code CLI (every
// front), the Codex CLI (its app-server front) or the Gemini CLI (its ACP
// front; DESIGN.md «Fronts»).
type harnessKind string

const (
	kindClaude harnessKind = "claude"
	kindCodex  harnessKind = "codex"
	kindGemini harnessKind = "gemini"
)

// kindInfo is what flower's commands know of one harness kind, in one
// place: a harness is its front's package and one entry of harnessKinds.
type kindInfo struct {
	// product is the kind as a person names it; binary its executable's
	// file name.
	product, binary string
	// says: the harness's --version answer is this kind's.
	says func(version string) bool
	// tested are the versions flower's real-harness suites passed on.
	tested []string
	// gate is the trust gate of an unattended run (DESIGN.md «Trust store»).
	gate *trust.Harness
	// headless is the front of an unattended run, and its name in the
	// registry of running flowers.
	headless  front.Launcher
	frontName string
	// screen is the front of the kind's own screen (-i) on f, with flower's
	// status line w (nil: -i is refused).
	screen func(f *interactive.Front, w *statusline.Writer, lang console.Lang, log *slog.Logger) front.Launcher
	// find is the harness a run starts when none is named, and why that
	// one (on PATH, else the pinned copy make installed).
	find func() (harnessChoice, error)
	// endpoint is the API endpoint a harness started with args and env in
	// workspace talks to, given the one its front said ("" for none
	// known), and what to check when it cannot be reached.
	endpoint func(given string, args, env []string, workspace string) (url, fix string)
	// pinned is where make installs the pinned copy.
	pinned func() string
	// doctor is the facts flower doctor checks on the kind, and doctorHow
	// how it starts the harness to check them.
	doctor    func() []checkup.Fact
	doctorHow string
	// key says whether the model's tools can read the API key, under a
	// harness started from env (DESIGN.md «Held harness»).
	key func(env []string) string
	// demo serves the demo's story in the kind's API on 127.0.0.1, with
	// home the harness's HOME.
	demo func(model *demo.Model, home string) (demoModel, error)
	// demoScreen readies the demo's harness HOME and workspace for demo
	// -i, and gives its arguments there and a line saying where flower's
	// figures show and how the screen is ended (nil: no demo -i).
	demoScreen func(home, workspace string) (args []string, how string, err error)
}

// demoModel is the scripted model of a demo: its URL, the harness's
// variables and arguments for it, and how to stop it.
type demoModel struct {
	url       string
	env, args []string
	stop      func()
}

// harnessKinds are the harnesses flower drives; kindNames in the order said.
var (
	harnessKinds = map[harnessKind]kindInfo{
		kindClaude: {product: "the Claude Code CLI", binary: "claude",
			says:   func(v string) bool { return strings.Contains(v, "(Claude Code)") },
			tested: harness.TestedVersions, gate: &trust.ClaudeCode, headless: harness.Headless{}, frontName: registry.FrontHeadless,
			screen: func(f *interactive.Front, w *statusline.Writer, lang console.Lang, log *slog.Logger) front.Launcher {
				return statusline.Launcher{Launcher: f, Binary: hookBinary, State: w.Path(), Lang: lang, Log: log}
			},
			find: func() (harnessChoice, error) { return chooseHarness("") }, endpoint: claudeEndpoint, demoScreen: claudeDemoScreen,
			pinned: cachedHarness, doctor: checkup.Facts, doctorHow: "started as a run starts it, against a scripted model on 127.0.0.1",
			key: keyLine, demo: claudeDemo},
		kindCodex: {product: "the Codex CLI", binary: "codex",
			says:   func(v string) bool { _, ok := codexrpc.VersionOf(v); return ok },
			tested: codexrpc.TestedVersions, gate: &trust.Codex, headless: codex.Launcher{}, frontName: registry.FrontCodex,
			find: onPathOrPinned("codex", "the Codex CLI", "codex", cachedCodex), demoScreen: codexDemoScreen, screen: func(f *interactive.Front, w *statusline.Writer, _ console.Lang, _ *slog.Logger) front.Launcher {
				return f.Codex(w.Text)
			},
			endpoint: func(given string, _, _ []string, _ string) (string, string) {
				// The front read its provider's base_url from Codex's
				// config ("" for the built-in provider: not checked).
				return given, "check the base_url of your model provider in $CODEX_HOME/config.toml (or -c), or the network"
			},
			pinned: cachedCodex, doctor: checkup.CodexFacts, doctorHow: "its app-server against a scripted Responses API on 127.0.0.1",
			key: func([]string) string { return codexKeyLine }, demo: codexDemo},
		kindGemini: {product: "the Gemini CLI", binary: "gemini",
			// Its --version says a bare version: only the name, or
			// --harness-kind, tells it.
			says:   func(string) bool { return false },
			tested: gemini.TestedVersions, gate: &trust.Gemini, headless: gemini.Launcher{}, frontName: registry.FrontGemini,
			find: onPathOrPinned("gemini", "the Gemini CLI", "gemini", cachedGemini),
			endpoint: func(_ string, _, env []string, _ string) (string, string) {
				if u, _ := envinject.Lookup(env, "GOOGLE_GEMINI_BASE_URL"); u != "" {
					return u, "check GOOGLE_GEMINI_BASE_URL, or the network"
				}
				return "https://generativelanguage.googleapis.com", "check the network, or set GOOGLE_GEMINI_BASE_URL"
			},
			pinned: cachedGemini, doctor: checkup.GeminiFacts, doctorHow: "its ACP mode, through flower's Gemini front, against a scripted Gemini API on 127.0.0.1",
			key: func([]string) string { return geminiKeyLine }, demo: geminiDemo},
	}
	kindNames = []harnessKind{kindClaude, kindCodex, kindGemini}
)

// info is k's entry of harnessKinds; the Claude Code CLI's for an unknown k, as
// before there was a choice.
func (k harnessKind) info() kindInfo {
	if i, ok := harnessKinds[k]; ok {
		return i
	}
	return harnessKinds[kindClaude]
}

// claudeEndpoint is the one flower holds Claude Code at: ANTHROPIC_BASE_URL
// as the environment and the settings files set it, or the default
// (levers.Endpoint, read when asked).
func claudeEndpoint(_ string, args, env []string, workspace string) (string, string) {
	own, _ := levers.Read(args, workspace)
	url := levers.Endpoint(args, env, workspace, own)
	if url != levers.DefaultEndpoint {
		return url, "check ANTHROPIC_BASE_URL (the environment, or a settings file's env), or the network"
	}
	return url, "check the network, or set ANTHROPIC_BASE_URL"
}

// envHarnessKind sets --harness-kind.
const envHarnessKind = "FLOWER_HARNESS_KIND"

// harnessKindFlag is --harness-kind, shared by the commands that start a
// harness.
func harnessKindFlag() cli.Flag {
	return &cli.StringFlag{Name: "harness-kind", EnvVars: []string{envHarnessKind},
		Usage:       "which harness --harness is: " + kindList(),
		DefaultText: "what --harness's --version says; claude without --harness"}
}

// kindList is the kinds, each with its product: "claude (the Claude Code
// CLI), codex (…) or gemini (…)".
func kindList() string {
	var each []string
	for _, k := range kindNames {
		each = append(each, string(k)+" ("+k.product()+")")
	}
	return orList(each)
}

// orList is "a, b or c".
func orList(each []string) string {
	if len(each) < 2 {
		return strings.Join(each, "")
	}
	return strings.Join(each[:len(each)-1], ", ") + " or " + each[len(each)-1]
}

// parseHarnessKind reads --harness-kind; "" is left to detection.
func parseHarnessKind(s string) (harnessKind, error) {
	k := harnessKind(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := harnessKinds[k]; ok || k == "" {
		return k, nil
	}
	var names []string
	for _, n := range kindNames {
		names = append(names, string(n))
	}
	return "", usagef("--harness-kind %q: want %s", s, orList(names))
}

// chooseOf resolves the harness a run starts, why that one, and its kind.
// An unnamed harness is looked for where the kind given says (its find:
// claude or codex on PATH, else the copy make installed; claude when no
// kind is given). A named harness's kind is its file name when that is a
// kind's binary, else what its --version says (anything else is the
// Claude Code CLI, as before there was a choice); a kind given over a
// binary of another is refused.
func chooseOf(ctx context.Context, flag, kind string) (harnessChoice, harnessKind, error) {
	k, err := parseHarnessKind(kind)
	if err != nil {
		return harnessChoice{}, "", err
	}
	if flag == "" {
		if k == "" {
			k = kindClaude
		}
		ch, err := k.info().find()
		return ch, k, err
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

// onPathOrPinned is a kind's find: its binary on PATH, else the pinned
// copy make installed (at pinned()), and why that one.
func onPathOrPinned(binary, product, makeTarget string, pinned func() string) func() (harnessChoice, error) {
	return func() (harnessChoice, error) {
		if p, err := exec.LookPath(binary); err == nil {
			return harnessChoice{Path: p, Why: binary + " on PATH"}, nil
		}
		if p := pinned(); isExecutable(p) {
			return harnessChoice{Path: p, Why: "flower's pinned " + strings.TrimPrefix(product, "the ") + " (no " + binary + " on PATH)"}, nil
		}
		return harnessChoice{}, usageError{fmt.Errorf("%w for --harness-kind %s: looked for %s on PATH and %s; pass --harness, put %s on PATH, or run `make %s`",
			errNoHarness, binary, binary, pinned(), binary, makeTarget)}
	}
}

// product is the kind as a person names it.
func (k harnessKind) product() string { return k.info().product }

// knownKind is the kind of the harness at path when its name or its
// --version says it for certain, with what its --version said (or "");
// a stand-in that says neither is no kind known.
func knownKind(ctx context.Context, path string) (k harnessKind, said string, ok bool) {
	// The pinned Gemini CLI is its package's bin, gemini.js.
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".exe"), ".js")
	for _, k := range kindNames {
		if harnessKinds[k].binary == name {
			return k, "", true
		}
	}
	v := askVersion(ctx, path)
	said = fmt.Sprintf(" (its --version says %q)", v)
	for _, k := range kindNames {
		if harnessKinds[k].says(v) {
			return k, said, true
		}
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

// cachedGemini is where scripts/install-gemini.sh puts the pinned Gemini
// CLI: the package's bin, a Node script.
func cachedGemini() string {
	return filepath.Join(cacheDir(), "flower", "gemini", gemini.PinnedVersion, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
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
// «Unreachable endpoint»): the kind's endpoint (kindInfo.endpoint).
func reachOf(kind harnessKind, env, args []string, workspace string) func(string) error {
	if env == nil {
		env = os.Environ()
	}
	return func(given string) error {
		url, fix := kind.info().endpoint(given, args, env, workspace)
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
