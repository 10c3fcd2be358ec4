package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/atomicfile"
	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/runpage"
)

// htmlFlags are show's flags for a run's page (DESIGN.md «Run page»).
func htmlFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "html", Usage: "write the run's page: one self-contained HTML file (a chart of the context at every API response, the generations, handoffs and edits)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "with --html, write the page to `FILE` (- for stdout)", DefaultText: "stdout when it is not a terminal, else RUN_DIR/run.html"},
		langFlag("with --html, the page's labels"),
	}
}

// pageLang reads --lang for a page.
func pageLang(c *cli.Context, env []string) (runpage.Lang, error) {
	s := langOf(c, env)
	lang, ok := runpage.ParseLang(s)
	if !ok {
		return "", usagef("--lang %s: want zh or en", s)
	}
	return lang, nil
}

// showHTML writes the page of the run in dir.
func showHTML(c *cli.Context, p proc, dir string) error {
	if c.Bool("json") {
		return usagef("--json and --html do not go together")
	}
	lang, err := pageLang(c, p.env)
	if err != nil {
		return err
	}
	run, err := runpage.Load(dir)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := runpage.Render(&b, run, runpage.Options{Lang: lang}); err != nil {
		return err
	}
	out := c.String("output")
	if out == "" && !isTerminal(p.stdout) {
		// show --html RUN_DIR > page.html: the page, not its path, goes
		// where stdout was sent.
		out = "-"
	}
	if out == "-" {
		page := b.String()
		if isTerminal(p.stdout) {
			// The page carries the workspace's text as it was: on a
			// terminal it is escaped as all output is (DESIGN.md
			// «Terminal safety»); a pipe or a file gets the page.
			page = console.Escape(page)
		}
		_, err := io.WriteString(p.stdout, page)
		return err
	}
	if out == "" {
		out = filepath.Join(dir, "run.html")
	}
	if err := atomicfile.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		abs = out
	}
	_, err = fmt.Fprintln(p.stdout, abs)
	return err
}
