package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/logfollow"
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
		UsageText: "flower logs [-f] [--json] [-C WORKSPACE] [RUN_DIR]",
		Description: `Prints RUN_DIR/flower.log, one line per record: time, level, step,
generation, phase, the message, then the record's other fields as
key=value. RUN_DIR defaults to WORKSPACE/.flower/runs/latest. With -f it
keeps printing lines as they are written, through the log being truncated
or replaced, until Ctrl-C.

Examples:
   flower logs                        # the latest run's log
   flower logs -f                     # follow the run going on now
   flower logs --json | jq 'select(.level == "WARN")'
   flower logs .flower/runs/20261130-112853`,
		Flags: []cli.Flag{
			workspaceFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until interrupted"},
			&cli.BoolFlag{Name: "json", Usage: "print the records as written, one JSON object per line"},
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
	if c.Bool("follow") {
		// Ctrl-C is how following ends, so it is not an error here.
		return logfollow.Follow(c.Context, path, logfollow.Options{}, lp.line)
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

// logPrinter writes the run log's records for a person:
//
//	11:48:30 INFO  main gen 2  handoff written  reason=threshold context=155000 path=…
//
// A line that is not a JSON object is written as it is.
type logPrinter struct {
	w   io.Writer
	raw bool   // write every line as it is
	day string // date of the last record, to mark when it changes
}

// The attributes shown before the message, in this order, since they say
// where in the run a record belongs; "gen" gets a label, being a number.
var logLead = []string{"step", "gen", "phase"}

func (p *logPrinter) line(l []byte) error {
	if p.raw || !gjson.ValidBytes(l) {
		return p.write(string(l))
	}
	rec := gjson.ParseBytes(l)
	if !rec.IsObject() {
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
	rec.ForEach(func(k, v gjson.Result) bool {
		if skip[k.String()] {
			skip[k.String()] = false
			return true
		}
		b.WriteString(sep)
		sep = " "
		writeAttr(&b, k.String(), v)
		return true
	})
	return p.write(b.String())
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
	b.WriteString(key + "=" + logValue(v))
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
