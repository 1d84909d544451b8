// Stylesheets are imported for esbuild to bundle (main-<hash>.css); they export nothing.
declare module '*.css';
