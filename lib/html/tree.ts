// Walking a page parse5 parsed: every node in document order, <template> contents included, without
// recursion (a tenant's page may nest elements as deep as it likes; a recursive walk overflows the
// stack at around 10,000 levels).

/** What the walk reads of a parse5 node. */
export interface TreeNode {
  nodeName: string;
  childNodes?: TreeNode[];
  /** A <template>'s contents. */
  content?: TreeNode;
}

/** A node's children, a <template>'s contents after them. */
export function childrenOf<T extends TreeNode>(node: T): T[] {
  return [...((node.childNodes ?? []) as T[]), ...((node.content?.childNodes ?? []) as T[])];
}

/** The nodes under `root` (not `root` itself), in document order. */
export function* descendantsOf<T extends TreeNode>(root: T): Generator<T> {
  const stack: T[] = [];
  const pushChildren = (node: T) => {
    const kids = childrenOf(node);
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
  };
  pushChildren(root);
  for (let node = stack.pop(); node; node = stack.pop()) {
    yield node;
    pushChildren(node);
  }
}
