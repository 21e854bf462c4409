import { html } from '@codemirror/lang-html';
import { EditorView, basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';
import './html-editor.css';

interface Props {
  /** The id of the visible label that names the editor. */
  labelledBy: string;
  value: string;
  onChange: (value: string) => void;
  describedBy?: string;
  invalid?: boolean;
  /** As tall as a screen that is mostly the editor wants it (Templates); 12 lines otherwise. */
  tall?: boolean;
}

/**
 * CodeMirror 6 with HTML highlighting, completion and folding (the Campaigns and Templates
 * screens). The editable area is a textbox named by the visible label; Tab is left to move focus
 * (Escape then Tab, as CodeMirror documents), so keyboard users are never trapped in it.
 */
export function HtmlEditor({ labelledBy, value, onChange, describedBy, invalid, tall }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(onChange);
  latest.current = onChange;

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      doc: value,
      extensions: [
        basicSetup,
        html(),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({
          'aria-labelledby': labelledBy,
          'aria-multiline': 'true',
          ...(describedBy ? { 'aria-describedby': describedBy } : {}),
          ...(invalid ? { 'aria-invalid': 'true' } : {}),
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) latest.current(update.state.doc.toString());
        }),
      ],
    });
    view.current = editor;
    return () => editor.destroy();
    // The editor is made once; later values come in through the effect below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // A value set from outside (a template chosen) replaces the document.
  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [value]);

  return <div ref={host} className={['code-editor', tall ? 'tall' : '', invalid ? 'invalid' : ''].filter(Boolean).join(' ')} aria-invalid={invalid ? true : undefined} />;
}
