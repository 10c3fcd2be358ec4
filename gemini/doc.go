// Package gemini is the Gemini CLI's front (docs/DESIGN.md «Gemini
// front»): each session is one `gemini --acp` process (package acp) in a
// Gemini home of flower's that holds the CLI's own compression off, its
// turns ACP prompts and its cut an ACP cancel, its meter the CLI's own
// record of the session, read in order with what the CLI says.
package gemini
