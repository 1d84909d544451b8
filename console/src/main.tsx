// The console's entry point (bundled by hack/build-console.ts into dist/console/main-<hash>.js).
import { render } from 'preact';
import { Shell } from './shell.js';
import './styles.css';

render(<Shell />, document.getElementById('root')!);
