/**
 * Live terminal output: streamed model text and a spinner while Keel waits. Only on a terminal;
 * never on piped, --json or --quiet output.
 */
import type { LoopEvent, RunResult } from '../types/index.js';

/**
 * Live output on a terminal (issue 26): the model's text as it streams, and a spinner with the
 * elapsed time while Keel waits for the model or for a tool. Only ever made when both stdout and
 * stderr are terminals and neither --json nor --quiet was given: piped output stays plain.
 */
export interface LiveSinks {
  /** Where the streamed text goes (the answer's stream: stdout), escaped for the terminal. */
  text: (s: string) => void;
  /** Where the spinner draws: raw, since it moves the cursor; it never carries text from a run. */
  spin: (s: string) => void;
  /** Redraw interval (tests shorten it). */
  intervalMs?: number;
  now?: () => number;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR = '\r\x1b[K';

export class LiveView {
  private readonly sinks: LiveSinks;
  private timer: NodeJS.Timeout | undefined;
  private label = '';
  private since = 0;
  private frame = 0;
  /** Text streamed for the current model call. */
  private stepText = '';
  /** The cursor is at the start of a line (nothing streamed is left unterminated). */
  private atLineStart = true;
  /** The last model reply: its text was streamed, and it called no tool (so it may be the answer). */
  private lastReply: { text: string; final: boolean } | undefined;
  /** Calls of the last reply whose results are still to come. */
  private pending: string[] = [];

  constructor(sinks: LiveSinks) {
    this.sinks = sinks;
  }

  private get now(): number {
    return (this.sinks.now ?? Date.now)();
  }

  private draw(): void {
    const secs = ((this.now - this.since) / 1000).toFixed(1);
    this.sinks.spin(`${CLEAR}${FRAMES[this.frame++ % FRAMES.length]} ${this.label} ${secs}s`);
  }

  private startSpinner(label: string): void {
    this.label = label;
    if (this.timer) return;
    this.since = this.now;
    this.frame = 0;
    this.draw();
    this.timer = setInterval(() => this.draw(), this.sinks.intervalMs ?? 100);
    // The spinner never keeps the process alive.
    this.timer.unref();
  }

  /** Clears the spinner's line (nothing else is ever on it). */
  stopSpinner(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.sinks.spin(CLEAR);
  }

  /** Before a whole line of trace or of the end is written: the spinner gone, the cursor at a line's start. */
  private lineStart(): void {
    this.stopSpinner();
    if (!this.atLineStart) {
      this.sinks.text('\n');
      this.atLineStart = true;
    }
  }

  /**
   * Called with each event before the trace prints it. Returns false when the trace should leave
   * the event out: a reply's text already shown as it streamed.
   */
  onEvent(e: LoopEvent): boolean {
    switch (e.type) {
      case 'model_request':
        this.lineStart();
        this.stepText = '';
        this.startSpinner('waiting for the model');
        return true;
      case 'text_delta':
        if (!e.text) return true;
        this.stopSpinner();
        this.stepText += e.text;
        this.sinks.text(e.text);
        this.atLineStart = e.text.endsWith('\n');
        return true;
      case 'assistant': {
        this.lineStart();
        const streamed = this.stepText.trim() !== '';
        this.lastReply = streamed ? { text: this.stepText, final: e.tool_calls.length === 0 } : undefined;
        this.stepText = '';
        this.pending = e.tool_calls.map((c) => c.name);
        if (this.pending.length) this.startSpinner(`running ${this.pending[0]}`);
        // The "model: …" line would repeat what was just streamed.
        return !streamed;
      }
      case 'tool_result': {
        this.lineStart();
        const i = this.pending.indexOf(e.record.tool);
        if (i >= 0) this.pending.splice(i, 1);
        // Drawn after the trace's line for this call (see after()).
        return true;
      }
      default:
        this.lineStart();
        return true;
    }
  }

  /** Called after the trace printed an event: the spinner comes back while calls are still running. */
  after(e: LoopEvent): void {
    if (e.type === 'tool_result' && this.pending.length) this.startSpinner(`running ${this.pending[0]}`);
  }

  /** The run's answer was already shown whole as it streamed: the end need not print it again. */
  answerShown(r: RunResult): boolean {
    return r.status === 'done' && Boolean(this.lastReply?.final) && this.lastReply?.text.trim() === (r.answer ?? '').trim();
  }

  /** The run is over (or failed): no spinner left behind, the cursor at a line's start. */
  stop(): void {
    this.lineStart();
  }
}

/** Wraps a trace printer with a live view: the view sees each event first and may leave it out of the trace. */
export function withLive(live: LiveView, print: ((e: LoopEvent) => void) | undefined): (e: LoopEvent) => void {
  return (e) => {
    if (live.onEvent(e)) print?.(e);
    live.after(e);
  };
}
