package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/logfollow"
	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/transcript"
	"github.com/flowerhq/flower/workbench"
)

// maxLogLine bounds one record of flower.log that flower logs reads.
const maxLogLine = 4 << 20

func logsCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a run's structured log readably",
		UsageText: "flower logs [-f] [--json] [--level L] [--since T] [-C WORKSPACE] [RUN_DIR]",
		Description: `Prints RUN_DIR/flower.log, one line per record: time, level, step,
generation, phase, the message, then the record's other fields as
key=value. Session ids are shortened to 8 characters, dollar amounts to 4
decimals, and a handoff document is folded into one preview line below
its record (--json has every record whole). Records below --level (INFO)
or before --since are left out. RUN_DIR defaults to
WORKSPACE/.flower/runs/latest. With -f it keeps printing lines as they are
written, through the log being truncated or replaced, until the run
ends (no flower in flower ps runs in RUN_DIR) or Ctrl-C.

Examples:
   flower logs                        # the latest run's log, INFO and above
   flower logs -f                     # follow the run going on now
   flower logs --level debug --since 10m
   flower logs --since 14:30          # today from 14:30 (or 2026-12-01 14:30)
   flower logs --json | jq 'select(.level == "WARN")'
   flower logs .flower/runs/20261130-112853`,
		Flags: []cli.Flag{
			workspaceFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until interrupted"},
			&cli.BoolFlag{Name: "json", Usage: "print the records as written, one JSON object per line (every level unless --level is given)"},
			&cli.StringFlag{Name: "level", Value: "info", Usage: "leave out records below `LEVEL`: debug, info, warn or error"},
			&cli.StringFlag{Name: "since", Usage: "leave out records before `T`: a duration back from now (10m, 2h) or a time (15:04, 15:04:05, 2006-01-02 15:04, RFC 3339)"},
		},
		Action: func(c *cli.Context) error { return logsAction(c, p) },
	}
}

func logsAction(c *cli.Context, p proc) error {
	dir, err := runDirOf(c)
	if err != nil {
		return err
	}
	path := workbench.LogFile(dir)
	lp := &logPrinter{w: p.stdout, raw: c.Bool("json")}
	if err := lp.filters(c, time.Now()); err != nil {
		return err
	}
	if c.Bool("follow") {
		// Ctrl-C, or the run's end, is how following ends: not an error.
		ctx, stop := context.WithCancel(c.Context)
		defer stop()
		ended := make(chan struct{})
		go func() {
			if runEnds(ctx, p.env, dir, runCheckInterval) {
				close(ended)
				stop()
			}
		}()
		err := logfollow.Follow(ctx, path, logfollow.Options{}, lp.line)
		select {
		case <-ended:
			fmt.Fprintf(p.stderr, "flower: no flower runs in %s any more: its log is printed to the end\n", dir)
		default:
		}
		return err
	}
	f, err := safefile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no %s in %s: not a run dir, or its run has not started", workbench.LogFileName, dir)
	}
	if err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	defer f.Close()
	// One record is bounded: a line past maxLogLine is said and skipped,
	// never held whole (DESIGN.md «Input caps»).
	r := transcript.NewLineReader(f, maxLogLine)
	for {
		l, err := r.Next()
		var le *transcript.LineError
		switch {
		case errors.As(err, &le):
			l = []byte(fmt.Sprintf("flower logs: line %d of %s holds %s, over the cap of %s for a log line: skipped", le.Line, path, safefile.Size(le.Size), safefile.Size(maxLogLine)))
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read log: %w", err)
		}
		if perr := lp.line(l); perr != nil {
			return perr
		}
	}
}

// runCheckInterval is how often logs -f asks flower ps's registry whether
// the run it follows still runs.
const runCheckInterval = time.Second

// runEnds waits until no live flower in the registry (flower ps's) runs in
// dir, and reports true; false when ctx ends first. A run is taken for
// ended only after two looks in a row, so that one starting now has the
// time to list itself. A run not listed (its registry could not be
// written) ends its follow at once: the rarer loss, against following an
// ended run for ever.
func runEnds(ctx context.Context, env []string, dir string, every time.Duration) bool {
	reg, err := registry.Dir(env)
	if err != nil {
		return false // no registry to ask: Ctrl-C alone ends following
	}
	want := sameDir(dir)
	t := time.NewTicker(every)
	defer t.Stop()
	for misses := 0; ; {
		live := false
		entries, err := registry.List(reg)
		if err != nil {
			return false
		}
		for _, e := range entries {
			live = live || want(e.RunDir)
		}
		if misses++; live {
			misses = 0
		}
		if misses >= 2 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// sameDir reports whether a path names dir, through links (runs/latest).
func sameDir(dir string) func(string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	return func(p string) bool {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return p == real
	}
}

// logPrinter writes the run log's records for a person:
//
//	11:48:30 INFO  main gen 2  handoff written  reason=threshold context=155000 path=…
//
// A line that is not a JSON object is written as it is.
type logPrinter struct {
	w   io.Writer
	raw bool   // write every line as it is
	day string // date of the last record, to mark when it changes
	// filter: records below min or before since are left out.
	filter bool
	min    slog.Level
	since  time.Time
}

// filters reads --level and --since. With --json, only a level given
// filters: the records as written are all of them.
func (p *logPrinter) filters(c *cli.Context, now time.Time) error {
	if !p.raw || c.IsSet("level") {
		if err := p.min.UnmarshalText([]byte(c.String("level"))); err != nil {
			return usagef("--level %s: want debug, info, warn or error", c.String("level"))
		}
		p.filter = true
	} else {
		p.min = slog.LevelDebug
	}
	if c.IsSet("since") {
		t, err := parseSince(c.String("since"), now)
		if err != nil {
			return err
		}
		p.since, p.filter = t, true
	}
	return nil
}

// sinceLayouts are the times --since takes, in the reader's zone unless
// they carry one.
var sinceLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parseSince is --since: a duration back from now, a time of day today, or
// a date and time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, now.Location()), nil
		}
	}
	for _, layout := range sinceLayouts {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--since %s: want a duration back from now (10m, 1h30m) or a time (15:04, 2006-01-02 15:04, 2006-01-02T15:04:05Z07:00)", s)
}

// keep says whether a record passes --level and --since; one without a
// level or a time passes what it cannot be held to.
func (p *logPrinter) keep(rec gjson.Result) bool {
	if !p.filter {
		return true
	}
	var lv slog.Level
	if v := rec.Get("level"); v.Exists() && lv.UnmarshalText([]byte(v.String())) == nil && lv < p.min {
		return false
	}
	if t, err := time.Parse(time.RFC3339Nano, rec.Get("time").String()); err == nil && t.Before(p.since) {
		return false
	}
	return true
}

// The attributes shown before the message, in this order, since they say
// where in the run a record belongs; "gen" gets a label, being a number.
var logLead = []string{"step", "gen", "phase"}

func (p *logPrinter) line(l []byte) error {
	if !gjson.ValidBytes(l) {
		return p.write(string(l))
	}
	rec := gjson.ParseBytes(l)
	if !rec.IsObject() {
		return p.write(string(l))
	}
	if !p.keep(rec) {
		return nil
	}
	if p.raw {
		return p.write(string(l))
	}
	var head []string
	var b strings.Builder
	skip := map[string]bool{"level": true, "msg": true} // shown once, skipped below
	if t, err := time.Parse(time.RFC3339Nano, rec.Get("time").String()); err == nil {
		// Shown in the zone it was written in: the run's own clock.
		if day := t.Format("2006-01-02"); day != p.day {
			if p.day != "" {
				b.WriteString("-- " + day + " --\n")
			}
			p.day = day
		}
		head = append(head, t.Format("15:04:05"))
		skip["time"] = true
	}
	if lv := rec.Get("level"); lv.Exists() {
		head = append(head, fmt.Sprintf("%-5s", lv.String()))
	}
	for _, k := range logLead {
		if v := rec.Get(k); v.Exists() {
			if k == "gen" {
				head = append(head, "gen")
			}
			head = append(head, logValue(v))
		}
	}
	if len(head) > 0 {
		head = append(head, "") // two spaces before the message
	}
	b.WriteString(strings.Join(append(head, logText(rec.Get("msg").String())), " "))
	// Each of the fields above is skipped once: a key slog wrote twice
	// (logger.With and the call both gave it) shows its second value.
	for _, k := range logLead {
		skip[k] = true
	}
	sep := "  "
	var folded []string
	rec.ForEach(func(k, v gjson.Result) bool {
		if skip[k.String()] {
			skip[k.String()] = false
			return true
		}
		if k.String() == "document" && v.Type == gjson.String {
			folded = append(folded, "    document: "+foldDocument(v.String()))
			return true
		}
		b.WriteString(sep)
		sep = " "
		writeAttr(&b, k.String(), v)
		return true
	})
	for _, f := range folded {
		b.WriteString("\n" + f)
	}
	return p.write(b.String())
}

// foldDocument is a handoff document as one preview line: its first line
// of text under the headings, and how long it is.
func foldDocument(doc string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(doc, "\r\n", "\n")), "\n")
	preview := ""
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			preview = logText(console.Abbrev(l, 80))
			break
		}
	}
	if preview == "" {
		preview = "(no text)"
	}
	return fmt.Sprintf("%s … (%d lines, %s; whole with --json)", preview, len(lines), safefile.Size(int64(len(doc))))
}

// write writes one line: as it is with --json, escaped for a terminal
// otherwise (a log a repository planted may hold anything).
func (p *logPrinter) write(s string) error {
	if !p.raw {
		s = console.Escape(s)
	}
	_, err := io.WriteString(p.w, s+"\n")
	return err
}

// writeAttr writes key=value, spreading a group (a nested object, as
// slog.Group writes it) into group.key=value.
func writeAttr(b *strings.Builder, key string, v gjson.Result) {
	if v.IsObject() && len(v.Map()) > 0 {
		sep := ""
		v.ForEach(func(k, sub gjson.Result) bool {
			b.WriteString(sep)
			sep = " "
			writeAttr(b, key+"."+k.String(), sub)
			return true
		})
		return
	}
	switch {
	case v.Type == gjson.Number && strings.HasSuffix(key, "_usd"):
		// Dollars as flower show gives them, not float noise.
		b.WriteString(key + "=" + strconv.FormatFloat(v.Float(), 'f', 4, 64))
	case v.Type == gjson.String && (key == "session" || strings.HasSuffix(key, "session_id")):
		b.WriteString(key + "=" + logValue(gjson.Result{Type: gjson.String, Str: shortID(v.String())}))
	default:
		b.WriteString(key + "=" + logValue(v))
	}
}

// logValue is a field's value: strings bare when that is unambiguous,
// else quoted; numbers, booleans and arrays as written.
func logValue(v gjson.Result) string {
	if v.Type != gjson.String {
		return v.Raw
	}
	s := v.String()
	if s == "" || strings.ContainsAny(s, " =\"\\") || logText(s) != s {
		return strconv.Quote(s)
	}
	return s
}

// logText keeps a message on one line: one with control characters is
// quoted.
func logText(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}
