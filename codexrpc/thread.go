package codexrpc

import "context"

// ThreadOptions are thread/start's params the client sets.
type ThreadOptions struct {
	Cwd            string `json:"cwd,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
	// Config overrides settings for this thread (SessionHookTrust's).
	Config map[string]any `json:"config,omitempty"`
}

// StartThread starts a thread and returns its id.
func (c *Client) StartThread(ctx context.Context, o ThreadOptions) (string, error) {
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := c.Call(ctx, MethodThreadStart, o, &res); err != nil {
		return "", err
	}
	return res.Thread.ID, nil
}

// StartTurn starts a turn of text in the thread and returns its id; the
// turn's end is a turn/completed notification.
func (c *Client) StartTurn(ctx context.Context, threadID, text string) (string, error) {
	params := map[string]any{"threadId": threadID, "input": []map[string]string{{"type": "text", "text": text}}}
	c.mu.Lock()
	if c.turnSandbox != nil {
		params["sandboxPolicy"] = c.turnSandbox
	}
	c.mu.Unlock()
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := c.Call(ctx, MethodTurnStart, params, &res); err != nil {
		return "", err
	}
	return res.Turn.ID, nil
}

// StartTurnShown is StartTurn with what a screen sharing the connection
// shows of the text: shown in its place, in the turn's user message (the
// model gets the text whole). "" shows the text itself.
func (c *Client) StartTurnShown(ctx context.Context, threadID, text, shown string) (string, error) {
	if c.screen != nil && shown != "" {
		c.screen.hide(text, shown)
	}
	return c.StartTurn(ctx, threadID, text)
}

// Interrupt asks Codex to stop the turn; it then ends with status
// interrupted.
func (c *Client) Interrupt(ctx context.Context, threadID, turnID string) error {
	return c.Call(ctx, MethodTurnInterrupt, map[string]string{"threadId": threadID, "turnId": turnID}, nil)
}

// Thread is a thread opened: its id and the model it runs.
type Thread struct {
	ID    string
	Model string
}

// OpenThread starts a thread, or, with resume set, resumes that one
// (thread/resume: Codex keeps a thread's history in CODEX_HOME, so it
// outlives the process that ran it).
func (c *Client) OpenThread(ctx context.Context, o ThreadOptions, resume string) (Thread, error) {
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"`
	}
	var err error
	if resume == "" {
		err = c.Call(ctx, MethodThreadStart, o, &res)
	} else {
		err = c.Call(ctx, MethodThreadResume, resumeParams{ThreadID: resume, ThreadOptions: o}, &res)
	}
	if err != nil {
		return Thread{}, err
	}
	return Thread{ID: res.Thread.ID, Model: res.Model}, nil
}

type resumeParams struct {
	ThreadID string `json:"threadId"`
	ThreadOptions
}
