/* list.h - intrusive doubly-linked lists (libuv's queue.h, the kernel's list_head).
 *
 * An object that can sit on a list embeds a struct list_node; the list itself is a struct
 * list_node head. Both must be initialised with list_init() (or LIST_INIT) before use, and an
 * unlinked node points at itself, so list_remove() is safe on a node that is not on any list
 * and list_is_linked() tells whether it is. Nothing allocates: insertion cannot fail.
 *
 *     struct job { struct list_node node; ... };
 *     struct list_node jobs = LIST_INIT(jobs);
 *     list_add_tail(&jobs, &j->node);
 *     struct list_node *i, *tmp;
 *     list_for_each_safe(i, tmp, &jobs) {
 *         struct job *j = list_entry(i, struct job, node);
 *         ...  (j may be removed and freed here)
 *     }
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct list_node {
    struct list_node *prev, *next;
};

#define LIST_INIT(name)                                                                            \
    {                                                                                              \
        &(name), &(name)                                                                           \
    }

/* The object holding the node ptr, as a pointer to type. */
#define list_entry(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void list_init(struct list_node *n)
{
    n->prev = n->next = n;
}

static inline bool list_is_empty(const struct list_node *head)
{
    return head->next == head;
}

/* Whether the (initialised) node is on a list. */
static inline bool list_is_linked(const struct list_node *n)
{
    return n->next != n;
}

static inline void list_insert_between_(struct list_node *n, struct list_node *prev,
                                        struct list_node *next)
{
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
}

static inline void list_add_tail(struct list_node *head, struct list_node *n)
{
    list_insert_between_(n, head->prev, head);
}

static inline void list_add_head(struct list_node *head, struct list_node *n)
{
    list_insert_between_(n, head, head->next);
}

/* Unlinks n (nothing happens when it is not linked) and leaves it pointing at itself. */
static inline void list_remove(struct list_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n;
}

/* The first node, or NULL when the list is empty. */
static inline struct list_node *list_first(const struct list_node *head)
{
    return list_is_empty(head) ? NULL : head->next;
}

#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* The same, safe against removing (and freeing) pos in the body. */
#define list_for_each_safe(pos, tmp, head)                                                         \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                               \
         (pos) = (tmp), (tmp) = (pos)->next)
