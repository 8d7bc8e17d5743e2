/* SPDX-License-Identifier: MIT */
/*
 * rbtree.h - a red-black tree with its leftmost node cached, in the kernel's layout, for the
 * rtmutex port's waiter trees (the lock's waiters, a task's pi_waiters), which 6.1 keeps in
 * `struct rb_root_cached` and changes with rb_add_cached() and rb_erase_cached().
 *
 * Why not a list: the tree is what the kernel's code walks and writes under wait_lock. Each
 * node lives on a waiting thread's stack, so the nodes an insertion reads and the links and
 * colours its rebalancing writes are other CPUs' lines; a sorted list reads every waiter
 * ahead of the new one and writes one. At 8 simulated writers that was most of what kept the
 * port apart from the tree's code (docs/locks.md, "Ports and the tree").
 *
 * Written from the algorithm's description: Guibas and Sedgewick, "A dichromatic framework for
 * balanced trees" (FOCS 1978); Cormen, Leiserson, Rivest and Stein, "Introduction to
 * Algorithms", 3rd ed., ch. 13 (insertion and deletion with their fix-ups, here with NULL
 * leaves and the deleted node's parent tracked instead of a sentinel); and the interface and
 * node layout of the kernel's include/linux/rbtree.h and rbtree_types.h (Linux 6.1;
 * Documentation/core-api/rbtree.rst): the parent pointer and the colour share a word, then
 * the right and the left child; a cleared node points to itself.
 *
 * Ordering among equal keys: a new node goes right of every node it is not less than, so
 * equal keys leave in the order they came (FIFO), as rb_add_cached() places them.
 *
 * Not thread-safe: the caller holds the lock that protects the tree. The one word read
 * without it, `leftmost` (a spinning waiter asks whether it is still the top waiter, as
 * rt_mutex_waiter_is_top_waiter() does), is written and read marked.
 */
#ifndef LOCKLAB_RBTREE_H
#define LOCKLAB_RBTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <locklab/kernel.h>

struct rb_node {
	uintptr_t parent_color; /* the parent's address | the colour in bit 0 */
	struct rb_node *right;
	struct rb_node *left;
} __attribute__((aligned(sizeof(long))));

struct rb_root_cached {
	struct rb_node *root;
	struct rb_node *leftmost;
};

enum { RB_RED = 0, RB_BLACK = 1 };

/* The structure a node is embedded in (the kernel's rb_entry(), container_of()). */
#define rb_entry(node, type, member) ((type *)(void *)((char *)(node) - offsetof(type, member)))

static inline struct rb_node *rb_parent(const struct rb_node *node)
{
	return (struct rb_node *)(node->parent_color & ~(uintptr_t)3);
}

/* A NULL leaf is black. */
static inline bool rb_is_black(const struct rb_node *node)
{
	return node == NULL || (node->parent_color & RB_BLACK);
}

static inline bool rb_is_red(const struct rb_node *node)
{
	return !rb_is_black(node);
}

static inline void rb_set_parent(struct rb_node *node, struct rb_node *parent)
{
	node->parent_color = (uintptr_t)parent | (node->parent_color & RB_BLACK);
}

static inline void rb_set_color(struct rb_node *node, int color)
{
	node->parent_color = (node->parent_color & ~(uintptr_t)RB_BLACK) | (uintptr_t)color;
}

/* RB_CLEAR_NODE / RB_EMPTY_NODE: a node in no tree points to itself. */
static inline void rb_clear_node(struct rb_node *node)
{
	node->parent_color = (uintptr_t)node;
}

static inline bool rb_empty_node(const struct rb_node *node)
{
	return node->parent_color == (uintptr_t)node;
}

static inline struct rb_node *rb_first_cached(const struct rb_root_cached *root)
{
	return READ_ONCE(root->leftmost);
}

/* The node whose place `old` took under `parent` (NULL: the root) now holds `new_child`. */
static inline void rb_replace_child(struct rb_root_cached *root, struct rb_node *parent,
				    struct rb_node *old, struct rb_node *new_child)
{
	if (parent == NULL)
		root->root = new_child;
	else if (parent->left == old)
		parent->left = new_child;
	else
		parent->right = new_child;
}

static inline void rb_rotate_left(struct rb_root_cached *root, struct rb_node *node)
{
	struct rb_node *pivot = node->right;
	struct rb_node *parent = rb_parent(node);

	node->right = pivot->left;
	if (pivot->left)
		rb_set_parent(pivot->left, node);
	rb_set_parent(pivot, parent);
	rb_replace_child(root, parent, node, pivot);
	pivot->left = node;
	rb_set_parent(node, pivot);
}

static inline void rb_rotate_right(struct rb_root_cached *root, struct rb_node *node)
{
	struct rb_node *pivot = node->left;
	struct rb_node *parent = rb_parent(node);

	node->left = pivot->right;
	if (pivot->right)
		rb_set_parent(pivot->right, node);
	rb_set_parent(pivot, parent);
	rb_replace_child(root, parent, node, pivot);
	pivot->right = node;
	rb_set_parent(node, pivot);
}

/* The next node in order (rb_next()): the leftmost of the right subtree, else the first
 * ancestor this node is left of. */
static inline struct rb_node *rb_next(const struct rb_node *node)
{
	if (node->right) {
		node = node->right;
		while (node->left)
			node = node->left;
		return (struct rb_node *)node;
	}
	struct rb_node *parent = rb_parent(node);
	while (parent && node == parent->right) {
		node = parent;
		parent = rb_parent(node);
	}
	return parent;
}

/*
 * A red node whose parent may be red: recolour upwards, then at most two rotations. Like the
 * kernel's, it stops without a store at a black parent and blackens the root only when it
 * reaches it: each store here is to a line of another waiter's stack. Out of line, as the
 * kernel's rb_insert_color() is (lib/rbtree.c).
 */
static __attribute__((noinline, unused)) void rb_insert_fixup(struct rb_root_cached *root,
							      struct rb_node *node)
{
	for (;;) {
		struct rb_node *parent = rb_parent(node);
		if (parent == NULL) {
			rb_set_color(node, RB_BLACK);
			return;
		}
		if (rb_is_black(parent))
			return;
		struct rb_node *grandparent = rb_parent(parent); /* a red node is never the root */
		bool on_left = parent == grandparent->left;
		struct rb_node *uncle = on_left ? grandparent->right : grandparent->left;

		if (rb_is_red(uncle)) {
			rb_set_color(parent, RB_BLACK);
			rb_set_color(uncle, RB_BLACK);
			rb_set_color(grandparent, RB_RED);
			node = grandparent;
			continue;
		}
		if (on_left && node == parent->right) {
			rb_rotate_left(root, parent);
			node = parent;
			parent = rb_parent(node);
		} else if (!on_left && node == parent->left) {
			rb_rotate_right(root, parent);
			node = parent;
			parent = rb_parent(node);
		}
		rb_set_color(parent, RB_BLACK);
		rb_set_color(grandparent, RB_RED);
		if (on_left)
			rb_rotate_right(root, grandparent);
		else
			rb_rotate_left(root, grandparent);
		return;
	}
}

/*
 * rb_add_cached(): insert `node` after every node it is not less than, and cache it as the
 * leftmost if it went left all the way down. Returns whether it is the new leftmost.
 */
static inline bool rb_add_cached(struct rb_node *node, struct rb_root_cached *root,
				 bool (*less)(const struct rb_node *, const struct rb_node *))
{
	struct rb_node **link = &root->root;
	struct rb_node *parent = NULL;
	bool leftmost = true;

	while (*link) {
		parent = *link;
		if (less(node, parent)) {
			link = &parent->left;
		} else {
			link = &parent->right;
			leftmost = false;
		}
	}
	node->parent_color = (uintptr_t)parent | RB_RED;
	node->left = NULL;
	node->right = NULL;
	*link = node;
	if (leftmost)
		WRITE_ONCE(root->leftmost, node);
	rb_insert_fixup(root, node);
	return leftmost;
}

/*
 * A black node left `child`'s side (child may be NULL, so its parent is given): restore the
 * black height by recolouring the sibling, or by at most three rotations, after which it
 * stops, as the kernel's does, without blackening the root again.
 */
static inline void rb_erase_fixup(struct rb_root_cached *root, struct rb_node *child,
				  struct rb_node *parent)
{
	while (child != root->root && rb_is_black(child)) {
		bool on_left = child == parent->left;
		struct rb_node *sibling = on_left ? parent->right : parent->left;

		if (rb_is_red(sibling)) {
			rb_set_color(sibling, RB_BLACK);
			rb_set_color(parent, RB_RED);
			if (on_left)
				rb_rotate_left(root, parent);
			else
				rb_rotate_right(root, parent);
			sibling = on_left ? parent->right : parent->left;
		}
		struct rb_node *near = on_left ? sibling->left : sibling->right;
		struct rb_node *far = on_left ? sibling->right : sibling->left;
		if (rb_is_black(near) && rb_is_black(far)) {
			rb_set_color(sibling, RB_RED);
			child = parent;
			parent = rb_parent(child);
			continue;
		}
		if (rb_is_black(far)) {
			rb_set_color(near, RB_BLACK);
			rb_set_color(sibling, RB_RED);
			if (on_left)
				rb_rotate_right(root, sibling);
			else
				rb_rotate_left(root, sibling);
			far = sibling;
			sibling = near;
		}
		rb_set_color(sibling, (int)(parent->parent_color & RB_BLACK));
		rb_set_color(parent, RB_BLACK);
		rb_set_color(far, RB_BLACK);
		if (on_left)
			rb_rotate_left(root, parent);
		else
			rb_rotate_right(root, parent);
		return;
	}
	if (rb_is_red(child))
		rb_set_color(child, RB_BLACK);
}

/*
 * rb_erase_cached(): remove `node`, moving the cached leftmost to its successor if needed. Out
 * of line, as the kernel's rb_erase() is.
 */
static __attribute__((noinline, unused)) void rb_erase_cached(struct rb_node *node,
							      struct rb_root_cached *root)
{
	struct rb_node *child, *parent;
	int removed_color = (int)(node->parent_color & RB_BLACK);

	if (root->leftmost == node)
		WRITE_ONCE(root->leftmost, rb_next(node));

	if (node->left == NULL || node->right == NULL) {
		child = node->left ? node->left : node->right;
		parent = rb_parent(node);
		rb_replace_child(root, parent, node, child);
		if (child)
			rb_set_parent(child, parent);
	} else {
		/* Two children: its successor, which has no left child, takes its place. */
		struct rb_node *successor = node->right;
		while (successor->left)
			successor = successor->left;
		removed_color = (int)(successor->parent_color & RB_BLACK);
		child = successor->right;
		if (rb_parent(successor) == node) {
			parent = successor;
		} else {
			parent = rb_parent(successor);
			parent->left = child;
			if (child)
				rb_set_parent(child, parent);
			successor->right = node->right;
			rb_set_parent(node->right, successor);
		}
		rb_replace_child(root, rb_parent(node), node, successor);
		successor->parent_color = node->parent_color; /* its parent and its colour */
		successor->left = node->left;
		rb_set_parent(node->left, successor);
	}
	if (removed_color == RB_BLACK)
		rb_erase_fixup(root, child, parent);
}

/*
 * Remove `node` if it is in the tree, and leave it cleared: what rtmutex's rt_mutex_dequeue()
 * and rt_mutex_dequeue_pi() do (RB_EMPTY_NODE, rb_erase_cached(), RB_CLEAR_NODE).
 */
static inline void rb_erase_cached_clear(struct rb_node *node, struct rb_root_cached *root)
{
	if (rb_empty_node(node))
		return;
	rb_erase_cached(node, root);
	rb_clear_node(node);
}

#endif /* LOCKLAB_RBTREE_H */
